import argparse

import torch
import torch.nn as nn

from utils.torch_utils import select_device, time_sync, xla_picker


def train(opt):
    device = select_device(opt.device, batch_size=opt.batch_size)  # expect: TPU102
    model = nn.Linear(4, 2).to(device)
    x = torch.ones(opt.batch_size, 4).to(device)
    t = time_sync()
    # --- ok ---
    y = torch.zeros(2).to(xla_picker())
    return model(x), t


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="")
    parser.add_argument("--batch-size", type=int, default=16)
    train(parser.parse_args())

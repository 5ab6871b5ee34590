import torch
import torch.nn as nn

import utils
from utils import get_device, used_here, xla_device


def main():
    device = utils.select_device(0)  # expect: TPU102
    model = nn.Linear(4, 2).to(device)
    batch = torch.ones(3, 4).to(get_device())  # expect: TPU102
    # --- ok ---
    # the helper's own file reports its CUDA device: no second finding here
    other = used_here()
    xla = xla_device()
    y = model(batch.to(xla)).to(other)
    return y


def picked():
    # the helper's file reports the availability check (TPU103); this sink is where the program silently runs on the CPU
    return torch.ones(1).to(utils.pick_device())  # expect: TPU102


def select_device():
    return "cpu"


def local_pick():
    return torch.ones(1).to(select_device())


if __name__ == '__main__':
    main()

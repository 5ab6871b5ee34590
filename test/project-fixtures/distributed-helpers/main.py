import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

import utils
from utils import save_named


def worker(index, args):
    utils.init_distributed_mode(args)
    rank = dist.get_rank()
    device = torch.device(args.device)
    model = nn.Linear(4, 2).to(device)
    for epoch in range(2):
        utils.save_on_master({"model": model.state_dict(), "epoch": epoch}, f"ckpt{epoch}.pt")  # expect: TPU601
    save_named(model.state_dict(), "last.pt")  # expect: TPU601
    # --- ok ---
    utils.save_on_master({"epoch": 1, "rank": rank}, "meta.pt")
    save_named({k: v.cpu() for k, v in model.state_dict().items()}, "cpu.pt")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    mp.spawn(worker, args=(args,), nprocs=args.nprocs)  # expect: TPU502

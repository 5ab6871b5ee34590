"""Single-GPU by default; multi-GPU when launched by torchrun (LOCAL_RANK set)."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn

from metrics import checkpoint_summary, write_metrics

LOCAL_RANK = int(os.getenv("LOCAL_RANK", -1))
WORLD_SIZE = int(os.getenv("WORLD_SIZE", 1))


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda", help="cuda device, i.e. 0 or cpu")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--save", default="last.pt")
    return p.parse_args()


def select_device(name):
    if name == "cpu" or not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device(name)


def main():
    args = parse_args()
    device = select_device(args.device)
    if LOCAL_RANK != -1:
        assert torch.cuda.device_count() > LOCAL_RANK, "insufficient CUDA devices for DDP"
        torch.cuda.set_device(LOCAL_RANK)
        device = torch.device("cuda", LOCAL_RANK)
        dist.init_process_group(backend="nccl")

    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(10, 20), nn.Tanh(), nn.Linear(20, 2)).to(device)
    if LOCAL_RANK != -1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[LOCAL_RANK], output_device=LOCAL_RANK)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()

    x = torch.randn(64, 10)
    y = (x[:, 0] > 0).long()
    losses = []
    for epoch in range(args.epochs):
        for i in range(0, len(x), args.batch_size):
            xb = x[i:i + args.batch_size].to(device)
            yb = y[i:i + args.batch_size].to(device)
            loss = criterion(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())

    if LOCAL_RANK in (-1, 0):
        state = model.module.state_dict() if hasattr(model, "module") else model.state_dict()
        torch.save(state, args.save)
        write_metrics(losses=losses, local_rank=LOCAL_RANK, world_size=WORLD_SIZE,
                      checkpoint=checkpoint_summary(args.save))


if __name__ == "__main__":
    main()

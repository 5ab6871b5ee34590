"""Train a small GPT on a token file, the way most CUDA codebases do it today.

This is the sample workspace of tpu-ready: every TPU migration issue below is real and is what the
scan reports (python -m tpu_ready is not needed: run `npm run demo` in the repository root).
"""
import argparse
import math
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from model import GPT, GPTConfig

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda")
parser.add_argument("--batch-size", type=int, default=12)
parser.add_argument("--block-size", type=int, default=1024)
parser.add_argument("--max-iters", type=int, default=5000)
parser.add_argument("--compile", action="store_true")
args = parser.parse_args()


class TokenDataset(Dataset):
    def __init__(self, path, block_size):
        self.data = np.memmap(path, dtype=np.uint16, mode="r")
        self.block_size = block_size

    def __len__(self):
        return len(self.data) // self.block_size - 1

    def __getitem__(self, i):
        chunk = torch.from_numpy(self.data[i * self.block_size:(i + 1) * self.block_size + 1].astype(np.int64))
        return chunk[:-1], chunk[1:]


def setup():
    ddp = int(os.environ.get("RANK", -1)) != -1
    if ddp:
        dist.init_process_group(backend="nccl")
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        device = f"cuda:{local_rank}"
    else:
        local_rank = 0
        device = args.device
    return ddp, local_rank, device


def main():
    ddp, local_rank, device = setup()
    torch.manual_seed(1337)
    torch.cuda.manual_seed_all(1337)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.benchmark = True

    model = GPT(GPTConfig(block_size=args.block_size, vocab_size=50257))
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, fused=True)
    model.to(device)
    if args.compile:
        model = torch.compile(model)
    if ddp:
        model = DDP(model, device_ids=[local_rank])

    dataset = TokenDataset("data/train.bin", args.block_size)
    sampler = DistributedSampler(dataset) if ddp else None
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=4, pin_memory=True)
    scaler = torch.cuda.amp.GradScaler()

    t0 = time.time()
    for it, (x, y) in enumerate(loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        if math.isnan(loss.item()):
            raise RuntimeError("loss is NaN")
        if it % 100 == 0:
            torch.cuda.synchronize()
            dt = time.time() - t0
            print(f"iter {it}: loss {loss.item():.4f}, {dt * 1000:.0f} ms, mem {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
            t0 = time.time()
        if it % 1000 == 0 and local_rank == 0:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iter": it}, "ckpt.pt")
        if it >= args.max_iters:
            break
    if ddp:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

import os
import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, DistributedSampler
import torch_xla.amp


def run(rank, model, ds):
    sampler = DistributedSampler(ds, num_replicas=torch.cuda.device_count(), rank=rank)  # has: TPU402 # not: TPU503
    loader = DataLoader(ds, sampler=sampler, drop_last=True)
    scaler = torch_xla.amp.GradScaler()  # has: TPU303 # not: TPU111
    torch.cuda.nvtx.range_push("step")  # has: TPU104 # not: TPU805
    torch.cuda.nvtx.range_pop()  # has: TPU104 # not: TPU805
    fast = torch.compile(model, backend="aot_torchxla_trace_once")  # has: TPU111 # not: TPU801
    for ids, lengths in loader:
        ids = ids[:, :lengths.max()]  # has: TPU404 # not: TPU203
        with torch.autocast(device_type="cuda", dtype=torch.float16):  # has: TPU301 # not: TPU302
            loss = fast(ids).sum()
        scaler.scale(loss).backward()


if __name__ == "__main__":
    mp.spawn(run, args=(None, None), nprocs=torch.cuda.device_count())  # has: TPU502 # not: TPU103

# --- ok ---
world = torch.cuda.device_count()  # has: TPU503
with torch.autocast(device_type="cpu", dtype=torch.float16):  # has: TPU302
    pass

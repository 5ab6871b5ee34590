"""DDP with mp.spawn: one process per GPU (or two CPU processes over gloo)."""
import os
import socket
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from metrics import checkpoint_summary, write_metrics

CKPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spawn_ckpt.pt")


def find_free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def setup(rank, world_size):
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend, rank=rank, world_size=world_size, timeout=timedelta(seconds=20))


def train(rank, world_size):
    setup(rank, world_size)
    torch.manual_seed(1)
    device = torch.device(f"cuda:{rank}") if torch.cuda.is_available() else torch.device("cpu")
    x = torch.randn(96, 8)
    y = x.sum(dim=1, keepdim=True) * 0.5
    data = TensorDataset(x, y)
    sampler = DistributedSampler(data, num_replicas=world_size, rank=rank, shuffle=False)
    loader = DataLoader(data, batch_size=12, sampler=sampler)

    model = Net().to(device)
    model = DDP(model, device_ids=[rank] if torch.cuda.is_available() else None)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    losses = []
    for epoch in range(3):
        for xb, yb in loader:
            xb = xb.to(device)
            yb = yb.to(device)
            opt.zero_grad()
            loss = F.mse_loss(model(xb), yb)
            loss.backward()
            opt.step()
            t = torch.tensor([loss.item()], device=device)
            dist.all_reduce(t)
            losses.append(t.item() / world_size)
        if rank == 0:
            print(f"epoch {epoch} loss {losses[-1]:.4f}")

    if rank == 0:
        torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}, CKPT)
    dist.barrier()
    if rank == 0:
        write_metrics(losses=losses, checkpoint=checkpoint_summary(CKPT))
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ.setdefault("MASTER_PORT", str(find_free_port()))
    world_size = torch.cuda.device_count() if torch.cuda.is_available() else 2
    mp.spawn(train, args=(world_size,), nprocs=world_size, join=True)

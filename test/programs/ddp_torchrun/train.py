"""DDP training launched with torchrun: torchrun --nproc_per_node 2 train.py"""
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from metrics import checkpoint_summary, write_metrics


def build_model():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def main():
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend=backend, timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")

    torch.manual_seed(0)
    x = torch.randn(136, 16)
    y = torch.randint(0, 4, (136,))
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=16, sampler=sampler)

    model = build_model().to(device)
    ddp_model = DDP(model, device_ids=[local_rank] if torch.cuda.is_available() else None)
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    losses = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = loss_fn(ddp_model(xb), yb)
            loss.backward()
            optimizer.step()
            # average the loss over ranks for logging
            reduced = loss.detach().clone()
            dist.all_reduce(reduced)
            losses.append(reduced.item() / world_size)

    ckpt = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ddp_ckpt.pt")
    if rank == 0:
        torch.save(ddp_model.module.state_dict(), ckpt)
    dist.barrier()
    if rank == 0:
        write_metrics(losses=losses, world_size=world_size, checkpoint=checkpoint_summary(ckpt))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

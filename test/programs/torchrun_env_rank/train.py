"""torchrun DDP that reads its rank from the launcher before the process group exists and hands it to
init_process_group: torchrun --nproc_per_node 2 train.py"""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from metrics import checkpoint_summary, write_metrics


class TinyLM(nn.Module):
    def __init__(self, vocab=40, dim=24):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids, labels):
        h = self.emb(ids)
        h = h + torch.tanh(self.proj(h))
        logits = self.head(h)[:, :-1].float()
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1), ignore_index=-100)


def main():
    assert "LOCAL_RANK" in os.environ, "torchrun should set LOCAL_RANK"
    global_rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(local_rank)
        device = f"cuda:{local_rank}"
    else:
        device = "cpu"
    dist.init_process_group(backend="nccl" if use_cuda else "gloo", rank=global_rank, world_size=world_size)

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(100 + global_rank)
    data = torch.randint(0, 40, (24, 12), generator=g)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=4)

    model = TinyLM().to(device)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if use_cuda else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    accumulation = 2
    losses = []
    for step, (ids,) in enumerate(loader, start=1):
        ids = ids.to(device)
        labels = ids.clone()
        labels[labels == 0] = -100
        loss = model(ids, labels)
        (loss / accumulation).backward()
        if step % accumulation != 0:
            continue
        optimizer.step()
        optimizer.zero_grad()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(mean.item() / world_size)

    ckpt = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lm_ckpt.pt")
    if global_rank == 0:
        torch.save(model.module.state_dict(), ckpt)
    dist.barrier()
    if global_rank == 0:
        write_metrics(losses=losses, world_size=world_size, checkpoint=checkpoint_summary(ckpt))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

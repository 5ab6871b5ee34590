"""Trains on CUDA, Apple MPS or CPU, whichever is there."""
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from metrics import write_metrics


def get_device():
    if torch.cuda.is_available():
        device = torch.device("cuda")
    elif getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")
    return device


class MLP(nn.Module):
    def __init__(self, d_in=12, d_hidden=24, d_out=3):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, d_hidden), nn.GELU(), nn.Linear(d_hidden, d_out))

    def forward(self, x):
        return self.net(x)


def build(model):
    if torch.cuda.is_available():
        model = model.cuda()
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
        model = model.to(device)
    return model


def train_epoch(model, loader, optimizer, device):
    model.train()
    losses = []
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main():
    torch.manual_seed(4)
    device = get_device()
    print("using", device)
    data = TensorDataset(torch.randn(84, 12), torch.randint(0, 3, (84,)))
    loader = DataLoader(data, batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(0))
    model = build(MLP())
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    start = time.time()
    for _ in range(3):
        losses += train_epoch(model, loader, optimizer, device)
    torch.cuda.synchronize() if torch.cuda.is_available() else None
    print(f"3 epochs in {time.time() - start:.2f}s")
    write_metrics(losses=losses, device=str(device))


if __name__ == "__main__":
    main()

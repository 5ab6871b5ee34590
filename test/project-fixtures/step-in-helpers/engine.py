import torch
from scaler import compute_loss


def train_one_epoch(model, data_loader, optimizer, loss_scaler, device):
    for x, y in data_loader:  # expect: TPU204
        loss = compute_loss(model, x.to(device), y.to(device))
        optimizer.zero_grad()
        loss_scaler(loss, optimizer)


def evaluate(model, data_loader, device):
    total = 0.0
    for x, y in data_loader:
        total += compute_loss(model, x.to(device), y.to(device))
    return total

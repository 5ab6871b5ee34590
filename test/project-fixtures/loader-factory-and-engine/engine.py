import torch


def train_one_epoch(model, criterion, data_loader, optimizer, device):
    model.train()
    for samples, targets in data_loader:  # expect: TPU204
        samples = samples.to(device)  # expect: TPU401
        targets = targets.to(device)
        loss = criterion(model(samples), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def count(data_loader):
    n = 0
    for batch in data_loader:
        n += len(batch)
    return n

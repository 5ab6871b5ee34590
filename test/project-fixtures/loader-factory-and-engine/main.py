import torch
import torch.nn as nn
import torch_xla

from datasets import build_dataloaders, build_loader, build_tensor, build_wrapped
from engine import count, train_one_epoch


def main():
    device = torch_xla.device()
    model = nn.Linear(4, 2).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = build_loader(64, 8)
    for epoch in range(2):
        train_one_epoch(model, criterion, loader, optimizer, device)  # expect: TPU401
    extra = build_loader(16, 4)
    for x, y in extra:  # expect: TPU204
        loss = criterion(model(x.to(device)), y.to(device))  # expect: TPU401
        loss.backward()
        optimizer.step()
    _, tuple_loader, _ = build_dataloaders(8)
    train_one_epoch(model, criterion, tuple_loader, optimizer, device)  # expect: TPU401
    # --- ok ---
    ds, _, nothing = build_dataloaders(8)
    train_one_epoch(model, criterion, ds, optimizer, device)
    other = build_wrapped(8)
    print(count(other))
    for x in build_tensor(4):
        model(x.to(device))


if __name__ == "__main__":
    main()

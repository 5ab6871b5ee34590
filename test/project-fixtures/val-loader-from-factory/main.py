import torch
import torch.nn as nn

from loaders import build_loader, build_padded_loader, build_train_loader, make_dataset


def evaluate(model, loader):
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(-1) == y).sum()
    return correct


def main(device):
    model = nn.Linear(4, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader = build_train_loader(make_dataset(100), 8)
    val_loader = build_loader(make_dataset(30), 8)  # expect: TPU403
    test_loader = build_loader(make_dataset(30), 8)
    val_padded = build_padded_loader(make_dataset(30), 8)
    for epoch in range(2):
        for x, y in train_loader:  # expect: TPU204
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(evaluate(model, val_loader), evaluate(model, val_padded))
    print(evaluate(model, test_loader))

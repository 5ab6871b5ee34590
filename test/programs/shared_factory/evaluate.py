import torch

from data import get_loaders


@torch.no_grad()
def evaluate(model, batch_size, device):
    _, test_loader = get_loaders(batch_size)
    model.eval()
    correct = 0
    seen = 0
    per_sample = []
    for data, target in test_loader:
        data, target = data.to(device), target.to(device)
        output = model(data)
        pred = output.argmax(dim=1)
        correct += (pred == target).sum().item()
        seen += target.size(0)
        for i in range(batch_size):
            per_sample.append(round(output[i].max().item(), 6))
    return correct, seen, per_sample

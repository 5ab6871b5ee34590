import torch
import torch.nn as nn

from data import get_loaders
from evaluate import evaluate
from metrics import write_metrics

batch_size = 20
device = "cuda" if torch.cuda.is_available() else "cpu"


def main():
    torch.manual_seed(8)
    train_loader, _ = get_loaders(batch_size)
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 2)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    steps = 0
    for epoch in range(2):
        model.train()
        for data, target in train_loader:
            data, target = data.to(device), target.to(device)
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(data), target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            steps += 1
    correct, seen, per_sample = evaluate(model, batch_size, device)
    print(f"test accuracy {correct}/{seen}")
    write_metrics(losses=losses, steps=steps, test_correct=correct, test_seen=seen, test_max_logits=per_sample)


if __name__ == "__main__":
    main()

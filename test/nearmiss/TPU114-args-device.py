import torch
import torch.nn as nn
import torch.nn.functional as F

import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--dev", default="cpu")
args = parser.parse_args()
model = nn.Linear(8, 2).to(torch.device(args.dev))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for step in range(100):
    x = torch.randn(16, 8)
    y = torch.randint(0, 2, (16,))
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())

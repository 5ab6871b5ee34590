import torch
import torch.nn as nn
import torch.nn.functional as F

# the device comes in as a parameter: the caller chooses it
def run(dev):
    model = nn.Linear(8, 2).to(dev)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(100):
        x = torch.randn(16, 8)
        y = torch.randint(0, 2, (16,))
        loss = F.cross_entropy(model(x.to(dev)), y.to(dev))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

import torch
import torch.nn as nn
import torch.nn.functional as F

# a pure-CPU training program: its host reads cost nothing on a device it never uses (TPU114 reports it)
model = nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for step in range(100):
    x = torch.randn(16, 8)
    y = torch.randint(0, 2, (16,))
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())

import torch
import torch.nn as nn
import torch.nn.functional as F

import sys

model = nn.Linear(8, 2)
if len(sys.argv) > 1:
    model.cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for step in range(100):
    x = torch.randn(16, 8)
    y = torch.randint(0, 2, (16,))
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())

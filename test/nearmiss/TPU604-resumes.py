"""A training script that already resumes from its checkpoint: no resume advice, and none pinned to `import torch`."""
import os

import torch
import torch.nn as nn

CKPT = "ckpt.pt"
model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
start = 0
if os.path.exists(CKPT):
    state = torch.load(CKPT, map_location="cpu")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    start = state["epoch"] + 1

for epoch in range(start, 10):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": epoch}, CKPT)

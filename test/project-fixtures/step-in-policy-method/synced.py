import torch
import torch_xla

from agent import Agent

policy = Agent(4, torch_xla.device())
for t in range(100000):
    policy.update(buffer)
    torch_xla.sync()

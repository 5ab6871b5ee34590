import numpy as np
import torch

import agent

device = torch.device("cuda")
policy = agent.Agent(4, device)
buffer = ReplayBuffer()
state = env.reset()
for t in range(100000):  # expect: TPU204
    action = env.action_space.sample()
    next_state, reward, done, _ = env.step(action)
    buffer.add(state, action, reward)
    state = next_state
    if t >= 1000:
        policy.update(buffer, 256)
    if done:
        state = env.reset()

# --- ok: an epoch loop around a helper whose updates loop by themselves; a loop that only acts ---
for epoch in range(10):
    policy.fit_offline(buffer, 100)
for t in range(1000):
    state, reward, done, _ = env.step(env.action_space.sample())

import torch

from agent import Agent

agent = Agent(8, 4, torch.device("cuda"))
state = torch.zeros(8, device="cuda")
for t in range(100000):  # expect: TPU204
    action = agent.act(state)
    state, reward, done = env_step(action)
    if t % 4 == 0:
        agent.learn(*sample_batch())

# --- ok: a loop that only acts (no training step in it) ---
for t in range(100):
    state, reward, done = env_step(env_sample())
    print(agent.describe())

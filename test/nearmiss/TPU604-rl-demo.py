"""A short RL demo: a step-count loop over a gym environment, the only save is the final model export."""
import gymnasium as gym
import torch
import torch.nn as nn

env = gym.make("CartPole-v1")
q = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.Adam(q.parameters(), lr=2.5e-4)
obs, _ = env.reset(seed=1)
for global_step in range(10000):
    action = q(torch.as_tensor(obs)).argmax().item()
    obs, reward, terminated, truncated, _ = env.step(action)
    loss = (q(torch.as_tensor(obs)).max() - reward) ** 2
    opt.zero_grad()
    loss.backward()
    opt.step()
    if terminated or truncated:
        obs, _ = env.reset()
torch.save(q.state_dict(), "runs/cartpole.pt")

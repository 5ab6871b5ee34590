# Host data that only exists on the host (environment flags, loader arrays, labels read from a batch) is copied each
# step because it must be; noise is drawn once before the loop or on the device. None of it is host-generated.
import numpy as np
import torch


def rollout(envs, policy, storage, steps, device):
    obs = torch.from_numpy(envs.reset()).float().to(device)
    for step in range(steps):
        action = policy(obs)
        obs_np, reward, done, infos = envs.step(action)
        masks = torch.FloatTensor([[0.0] if d else [1.0] for d in done]).to(device)
        obs = torch.from_numpy(obs_np).float().to(device)
        storage.insert(obs, torch.as_tensor(reward, device=device), masks)


def train(model, opt, loader, device, dim=8):
    base = torch.from_numpy(np.random.normal(0, 1, (4, dim))).float().to(device)
    for arrays, labels in loader:
        x = torch.from_numpy(np.asarray(arrays)).to(device)
        y = torch.tensor(labels).to(device)
        jitter = torch.randn(x.size(0), dim, device=device)
        loss = torch.nn.functional.cross_entropy(model(x + jitter + base.sum()), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

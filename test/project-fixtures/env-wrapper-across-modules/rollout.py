import torch
import torch_xla
from envs import HostEnv, make_envs

device = torch_xla.device()
policy = torch.nn.Linear(4, 2).to(device)
envs = make_envs(None, device)
obs = envs.reset()
for step in range(1000):
    with torch.no_grad():
        action = policy(obs).argmax(-1)
    obs, reward, done, infos = envs.step(action)  # expect: TPU201

# --- ok: the wrapper returns host data; actions made on the host ---
plain = HostEnv(None)
for step in range(10):
    a = policy(obs).argmax(-1)
    out = plain.step(a)
    host_action = torch.zeros(2, dtype=torch.long)
    obs, reward, done, infos = envs.step(host_action)

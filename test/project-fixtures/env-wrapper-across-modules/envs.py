import torch


class DeviceEnv:
    # a vectorized-env wrapper that takes device actions and returns device observations
    def __init__(self, venv, device):
        self.venv = venv
        self.device = device

    def reset(self):
        return torch.from_numpy(self.venv.reset()).float().to(self.device)

    def step(self, actions):
        actions = actions.cpu().numpy()
        obs, reward, done, info = self.venv.step(actions)
        return torch.from_numpy(obs).float().to(self.device), reward, done, info


class HostEnv:
    # reads the actions but hands back NumPy: no upload here
    def __init__(self, venv):
        self.venv = venv

    def step(self, actions):
        return self.venv.step(actions.cpu().numpy())


def make_envs(venv, device):
    return DeviceEnv(venv, device)

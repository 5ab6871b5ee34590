import torch
import torch.nn.functional as F


class Agent:
    def __init__(self, dim, actions, device):
        self.net = torch.nn.Linear(dim, actions).to(device)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-4)
        self.device = device

    def act(self, state):
        # one greedy action per environment step: a host read every step
        return self.net(state.unsqueeze(0)).argmax(1).item()  # expect: TPU201

    def learn(self, states, targets):
        loss = F.smooth_l1_loss(self.net(states).max(1).values, targets)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()

    def describe(self):
        return {"actions": self.net.out_features}

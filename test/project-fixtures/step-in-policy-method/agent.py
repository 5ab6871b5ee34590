import torch
import torch.nn.functional as F


class Agent:
    def __init__(self, dim, device):
        self.device = device
        self.actor = torch.nn.Linear(dim, 2).to(device)
        self.critic = torch.nn.Linear(dim + 2, 1).to(device)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=1e-3)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=1e-3)

    def update(self, buffer, batch_size=32):
        state, action, reward = buffer.sample(batch_size)
        q = self.critic(torch.cat([state, action], 1))
        critic_loss = F.mse_loss(q, reward)
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()

    def fit_offline(self, buffer, epochs):
        # its own loop over the updates: that loop is the training loop (a hot loop of this module)
        for _ in range(epochs):  # expect: TPU204
            state, action, reward = buffer.sample(32)
            loss = F.mse_loss(self.critic(torch.cat([state, action], 1)), reward)
            self.critic_opt.zero_grad()
            loss.backward()
            self.critic_opt.step()

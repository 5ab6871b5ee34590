import torch
import torch_xla.core.xla_model as xm

from agent import Agent


class Runner:
    def __init__(self, env, net, device):
        self.env = env
        self.agent = Agent(net, device)
        self.device = device

    def run(self, steps):
        state = torch.zeros(4, device=self.device)
        for t in range(steps):  # expect: TPU204
            action = self.agent.act(state)
            next_state, reward, done, _ = self.env.step(action.item())  # expect: TPU201
            self.agent.learn(state, action, reward)
            state = torch.as_tensor(next_state, device=self.device)

    def run_synced(self, steps):
        # --- ok: the same step with a barrier every iteration ---
        state = torch.zeros(4, device=self.device)
        for t in range(steps):
            self.agent.learn(state, 0, 1.0)
            xm.mark_step()

    def warm(self, states):
        # --- ok: a loop that never trains ---
        for s in states:
            self.agent.describe(s)

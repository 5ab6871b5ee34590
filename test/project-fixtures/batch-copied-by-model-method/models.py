import torch


class PairModel(torch.nn.Module):
    def __init__(self, opt):
        super().__init__()
        self.device = torch.device("cuda:0")
        self.net = torch.nn.Linear(4, 4).to(self.device)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def set_input(self, batch):
        self.real = batch["A"].to(self.device)  # expect: TPU401
        self.label = batch["B"].to(self.device)

    def set_noise(self, noise):
        # not called from a loop over batches
        self.noise = noise.to(self.device)

    def optimize(self):
        loss = self.net(self.real).sum()
        loss.backward()
        self.opt.step()

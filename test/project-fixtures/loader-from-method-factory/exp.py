import torch
import torch.nn as nn

from data_factory import data_provider


class Exp:
    def __init__(self, args):
        self.args = args
        self.device = torch.device("cuda:0")
        self.model = nn.Linear(4, 1).to(self.device)

    def _get_data(self, flag):
        data_set, data_loader = data_provider(self.args, flag)
        return data_set, data_loader

    def train(self):
        train_data, train_loader = self._get_data(flag="train")
        opt = torch.optim.Adam(self.model.parameters())
        for epoch in range(self.args.epochs):
            for i, (x, y) in enumerate(train_loader):
                x = x.float().to(self.device)  # expect: TPU401
                y = y.float().to(self.device)
                loss = ((self.model(x) - y) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()

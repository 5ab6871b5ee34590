import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, lr=0.05, use_cuda=True):
        self.use_cuda = use_cuda and torch.cuda.is_available()
        self.model = model.cuda() if self.use_cuda else model
        self.optimizer = torch.optim.RMSprop(self.model.parameters(), lr=lr)
        self.criterion = nn.MSELoss()

    def step(self, x, y):
        if self.use_cuda:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        self.optimizer.zero_grad()
        loss = self.criterion(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    @torch.no_grad()
    def evaluate(self, x, y):
        self.model.eval()
        if self.use_cuda:
            x, y = x.cuda(), y.cuda()
        out = self.criterion(self.model(x), y).item()
        self.model.train()
        return out

    def save(self, path):
        torch.save({"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}, path)

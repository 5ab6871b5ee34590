import torch


class MixedTrainer:
    def __init__(self, model):
        self.params = list(model.parameters())

    def backward(self, loss):
        (loss * 2.0).backward()

    def optimize(self, opt):
        norm = self._norms()
        opt.step()
        return norm

    def _norms(self):
        total = 0.0
        for p in self.params:
            with torch.no_grad():
                total += torch.norm(p.grad).item() ** 2  # expect: TPU201
        return total ** 0.5

    @torch.no_grad()
    def report(self):
        # eval-style helper: runs without grad as a whole
        return sum(torch.norm(p).item() for p in self.params)

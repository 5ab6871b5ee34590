import torch


class BestKeeper:
    """Keeps the weights of the best validation score."""

    def __init__(self):
        self.best = None

    def __call__(self, score, net, folder):
        if self.best is None or score < self.best:
            self.best = score
            self._write(net, folder)

    def _write(self, net, folder):
        torch.save(net.state_dict(), folder + "/best_weights.pt")  # expect: TPU601


def dump_last(net, folder):
    torch.save(net.state_dict(), folder + "/last_weights.pt")  # expect: TPU601

import numpy as np
import torch


class EarlyStopping:
    def __init__(self, patience=3):
        self.patience = patience
        self.best = np.inf

    def __call__(self, val_loss, model, path):
        if val_loss < self.best:
            self.best = val_loss
            self.save_checkpoint(model, path)

    def save_checkpoint(self, model, path):
        torch.save(model.state_dict(), path + "/checkpoint.pth")  # expect: TPU601


def save_optimizer(opt, path):
    torch.save(opt.state_dict(), path)  # expect: TPU601


def save_both(model, opt, paths):
    def write(path_dict):
        model.save(path_dict["w"])
        torch.save(opt.state_dict(), path_dict["o"])  # expect: TPU601

    write(paths)

"""A checkpoint module that places nothing: the training script passes it device state."""
import torch

from tools import save_both


def checkpoint(model, opt, folder):
    save_both(model, opt, {"w": folder + "/w.pt", "o": folder + "/o.pt"})


def restore(model, opt, folder):
    # files a CUDA training run wrote: they hold GPU tensors
    opt.load_state_dict(torch.load(folder + "/resume_o.pt"))  # expect: TPU602

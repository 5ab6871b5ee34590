import torch
import torch_xla


def select_device(index=0):
    device = torch.device(f"cuda:{index}")
    return device


def get_device():
    return "cuda" if torch.cuda.is_available() else "cpu"


def used_here():
    dev = torch.device("cuda")  # expect: TPU102
    torch.zeros(1).to(dev)
    return dev


def xla_device():
    return torch_xla.device()

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


def pick_device():
    # more than the choice in the branch: TPU103 reports the check, TPU102 reports the callers' sinks (not here)
    if torch.cuda.is_available():  # expect: TPU103
        print("using the GPU")
        arg = "cuda:0"
    else:
        arg = "cpu"
    return torch.device(arg)


def xla_device():
    return torch_xla.device()

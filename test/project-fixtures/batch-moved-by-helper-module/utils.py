import torch


def to_gpu(x):
    x = x.contiguous()
    if torch.cuda.is_available():
        x = x.cuda(non_blocking=True)
    return torch.autograd.Variable(x)


def to_long(x):
    # a cast on whatever device x is on: no copy
    return x.long()

# A helper that moves its batches to CUDA: the program that imports it does place work on an accelerator.
import torch


def load_arrays(n, dim):
    return torch.randn(n, dim).cuda(), torch.randint(0, 2, (n,)).cuda()  # expect: TPU101

"""A CPU-only program that creates its group without a backend: gloo is what it gets everywhere."""
import torch
import torch.distributed as dist


def average(t):
    dist.init_process_group()
    dist.all_reduce(t)
    return t / dist.get_world_size()


import os

import torch
import torch.distributed as dist


def is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0


def init_distributed_mode(args):
    args.rank = int(os.environ["RANK"])  # expect: TPU503
    args.gpu = int(os.environ["LOCAL_RANK"])  # expect: TPU503
    torch.cuda.set_device(args.gpu)
    dist.init_process_group(backend="nccl", init_method="env://")  # expect: TPU501


def save_on_master(*args, **kwargs):
    if is_main_process():
        torch.save(*args, **kwargs)  # expect: TPU601


def save_named(state, path):
    torch.save(state, path)  # expect: TPU601

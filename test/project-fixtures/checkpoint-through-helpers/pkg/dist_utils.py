import os

import torch
import torch.distributed as dist


def is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0


def init_distributed():
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")


def save_on_master(*args, **kwargs):
    # nobody in the project calls it: what it gets is unknown, in training code the model's state
    if is_main_process():
        torch.save(*args, **kwargs)  # expect: TPU601


def save_on_rank0(*args, **kwargs):
    # called only with host values: quiet
    if is_main_process():
        torch.save(*args, **kwargs)


def write_meta(epoch):
    save_on_rank0({"epoch": epoch}, "meta.pt")

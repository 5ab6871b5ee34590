import shutil

import torch


def save_checkpoint(state, is_best, filename="checkpoint.pth.tar"):
    torch.save(state, filename)  # expect: TPU601
    if is_best:
        shutil.copyfile(filename, "model_best.pth.tar")


def save_cpu(state, filename):
    torch.save(state, filename)

import torch
import torch.distributed as dist


def is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0


def save_on_master(*args, **kwargs):
    if is_main_process():
        torch.save(*args, **kwargs)  # expect: TPU601


def save_copy(obj, path):
    # only CPU copies reach it: no device state
    torch.save(obj, path)


def save_model(model, optimizer, path):
    model = model.to("cuda")
    save_on_master({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)  # expect: TPU601

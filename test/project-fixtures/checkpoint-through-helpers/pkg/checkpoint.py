"""A checkpoint module that places nothing itself: the state dicts it writes come from the trainer's model."""
import os

import torch


def save_state(state_dict, path):
    torch.save(state_dict, path)  # expect: TPU601
    with open(os.path.splitext(path)[0] + ".txt", "w") as f:
        f.write(path)


def save_model(model, path):
    state_dict = model.state_dict()
    save_state(state_dict, path)


def export_cpu(model, path):
    # CPU copies: no device state
    torch.save({k: v.cpu() for k, v in model.state_dict().items()}, path)


def build_checkpoint(model, optimizer, epoch):
    return {"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict()}



def save_full(model, optimizer, path):
    # the state is built here from what the trainer passes
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
    torch.save(state, path)  # expect: TPU601


def save_unused(model, path):
    # no module calls it: nothing says the model is on a device
    torch.save(model.state_dict(), path)

"""Device helpers of a small trainer: the device is chosen at run time, CUDA when present, else the CPU."""
import torch as th

LOCAL_GPUS = 4


def current_device(rank=0):
    if th.cuda.is_available():
        return th.device(f"cuda:{rank % LOCAL_GPUS}")
    return th.device("cpu")


def gpu_only():
    return th.device("cuda:0")


def read_weights(path, **kwargs):
    with open(path, "rb") as f:
        return th.load(f, **kwargs)

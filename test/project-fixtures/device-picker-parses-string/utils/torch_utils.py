import os

import torch


def select_device(device="", batch_size=0):
    # parses the request, hides GPUs for "cpu", then prefers CUDA when it is there
    s = "torch " + torch.__version__ + " "
    device = str(device).strip().lower().replace("cuda:", "")
    cpu = device == "cpu"
    if cpu:
        os.environ["CUDA_VISIBLE_DEVICES"] = "-1"
    elif device:
        os.environ["CUDA_VISIBLE_DEVICES"] = device
        assert torch.cuda.is_available(), "no CUDA device"  # expect: TPU103
    if not cpu and torch.cuda.is_available():  # expect: TPU103
        n = len(device.split(",")) if device else 1
        if n > 1 and batch_size > 0:
            assert batch_size % n == 0
        s += "CUDA:0 (%s)\n" % torch.cuda.get_device_properties(0).name
        arg = "cuda:0"
    else:
        s += "CPU\n"
        arg = "cpu"
    print(s)
    return torch.device(arg)


def time_sync():
    return 0.0


def xla_picker():
    # the CUDA arm's value is only logged: the returned device is the XLA one, so the callers' sinks are fine
    import torch_xla
    if torch.cuda.is_available():  # expect: TPU103
        print("GPU present")
        note = "cuda:0"
    else:
        note = "cpu"
    print("would have used", note)
    return torch_xla.device()

import torch


def stream_batches(n, size, device="cuda", seed=0):
    # every caller (run.py) passes device: the default is dead
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        buf = torch.randint(0, 100, (size,), generator=g)
        yield buf.to(device)


def batches(*args, **kwargs):
    # a pure forwarder whose callers pass device= by keyword
    for b in stream_batches(*args, **kwargs):
        yield b


def eval_batches(n, device="cuda"):  # expect: TPU102
    # run.py calls this without device: the default is where the device comes from
    return [torch.zeros(4).to(device) for _ in range(n)]


def library_batches(n, device="cuda"):  # expect: TPU102
    # no caller in the project: callers are unknown, the default stays reported
    return [torch.ones(4, device=device) for _ in range(n)]


def as_callback(n, device="cuda"):  # expect: TPU102
    # run.py passes it on as a value: that caller is unknown
    return torch.ones(n).to(device)

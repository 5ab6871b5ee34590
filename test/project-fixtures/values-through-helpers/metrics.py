import time

import torch

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def get_batch(data, batch_size, block=8):
    # a random window of the token stream, moved to the accelerator
    ix = torch.randint(len(data) - block, (batch_size,))
    x = torch.stack([data[i:i + block] for i in ix])
    return x.to(DEVICE)


def elapsed_ms(start):
    # host clock arithmetic: a Python float
    return (time.time() - start) * 1000.0

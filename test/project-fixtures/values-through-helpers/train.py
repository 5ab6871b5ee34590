import time

import torch
import torch.nn as nn

import metrics
from metrics import get_batch


def train(model, data, opt, steps):
    start = time.time()
    for step in range(steps):
        x = get_batch(data, 4)
        if x.max() > 100:  # expect: TPU202
            continue
        loss = nn.functional.mse_loss(model(x.float()), x.float())
        loss.backward()
        opt.step()
        # --- ok ---
        # a value another module gives back on the host: no device read here
        if metrics.elapsed_ms(start) > 60_000:
            break

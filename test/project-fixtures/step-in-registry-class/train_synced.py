import torch_xla

from algorithms import Mixup

# --- ok: the same inherited step, with a step barrier every iteration ---
algorithm = Mixup(10, {"lr": 1e-3})
for step in range(1000):
    algorithm.update(next(batches))
    torch_xla.sync()

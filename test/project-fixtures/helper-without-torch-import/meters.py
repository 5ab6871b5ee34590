# no torch import here: the model and the losses come from train.py's loop


class History:
    def __init__(self):
        self.values = []

    def add(self, loss):
        self.values.append(loss.item())


def grad_norm(model):
    total = 0.0
    for p in model.parameters():
        total += p.grad.norm().item()  # expect: TPU201
    return total


def log_step(count):
    # a Python int from the caller: nothing to read back
    if count % 100 == 0:
        print(f"step {count}")

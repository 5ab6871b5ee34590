import torch


class MetricLogger:
    def __init__(self):
        self.meters = {}

    def update(self, **kwargs):
        for k, v in kwargs.items():
            if isinstance(v, torch.Tensor):
                v = v.item()
            self.meters[k] = v


def clip_gradients(model, clip):
    norms = []
    for name, p in model.named_parameters():
        if p.grad is not None:
            param_norm = p.grad.data.norm(2)
            norms.append(param_norm.item())  # expect: TPU201
    return norms


def mean_of(values):
    # only host numbers reach it: no read
    return sum(values) / len(values)


def report_eval(loss):
    return float(loss.item())


def check_range(y):
    if torch.min(y) < -1.0:  # expect: TPU202
        print("min value is", torch.min(y))
    return y.clamp(-1.0, 1.0)

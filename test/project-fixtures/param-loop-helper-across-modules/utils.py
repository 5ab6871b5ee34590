import torch


def clip_gradients(model, clip):
    # per-parameter clipping with a Python branch on each norm: one finding, the branch related
    norms = []
    for name, p in model.named_parameters():
        if p.grad is not None:
            param_norm = p.grad.data.norm(2)
            norms.append(param_norm.item())  # expect: TPU201
            clip_coef = clip / (param_norm + 1e-6)
            if clip_coef < 1:
                p.grad.data.mul_(clip_coef)
    return norms


def grad_stats(model):
    # called only every log_interval steps: the logging the user asked for
    return [p.grad.abs().max().item() for p in model.parameters() if p.grad is not None]

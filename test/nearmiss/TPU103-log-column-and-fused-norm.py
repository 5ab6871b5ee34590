"""A log format that gains a memory column on CUDA, and a norm that takes Apex's fused amp_C kernel on CUDA devices."""
import torch

try:
    from amp_C import multi_tensor_l2norm
except ImportError:
    multi_tensor_l2norm = None


def log_format(header):
    columns = [header, "eta: {eta}", "time: {time}"]
    if torch.cuda.is_available():
        columns += ["max mem: {memory:.0f}"]
    return "  ".join(columns)


def total_norm(grads):
    norms = []
    for device in {g.device for g in grads}:
        group = [g for g in grads if g.device == device]
        if device.type == "cuda" and multi_tensor_l2norm is not None:
            flag = torch.zeros((1, 1), dtype=torch.int, device=device)
            norms.append(multi_tensor_l2norm(2048 * 32, flag, [group], False)[0])
        else:
            norms += [torch.norm(g, p=2, dtype=torch.float32) for g in group]
    return torch.norm(torch.stack(norms))

"""torch_xla/utils/checkpoint.py (v2.3.0..v2.9.0): activation checkpointing; torch's on the CPU."""
import torch.utils.checkpoint as _cp


def checkpoint(function, *args, use_reentrant: bool = True, **kwargs):
  # utils/checkpoint.py:219 at v2.9.0
  return _cp.checkpoint(function, *args, use_reentrant=use_reentrant, **kwargs)

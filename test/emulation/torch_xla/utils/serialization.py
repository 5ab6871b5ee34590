"""torch_xla/utils/serialization.py (v2.3.0..v2.9.0): save/load as one torch.save file here (the real
module writes one file per tensor beside a pickled skeleton; the format is not emulated)."""
import torch

from ..core import xla_model as xm


def save(data, path, master_only=True, global_master=False):
  # serialization.py:46 at v2.9.0
  xm.save(data, path, master_only=master_only, global_master=global_master)


def load(path):
  # serialization.py:79 at v2.9.0
  return torch.load(path)

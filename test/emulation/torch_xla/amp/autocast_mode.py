"""torch_xla/amp/autocast_mode.py (v2.3.0:7 class autocast; v2.9.0 same TPU branch)."""
import warnings

import torch

from ..core import xla_model as xm
from ._torch_autocast_patch import autocast as _torch_autocast


class autocast(_torch_autocast):

  def __init__(self, device, enabled: bool = True, dtype: torch.dtype = None, cache_enabled: bool = True):
    # autocast_mode.py: assert 'xla' in device.__str__(), "torch_xla.autocast is available for XLA:TPU, XLA:GPU"
    assert 'xla' in str(device), "torch_xla.autocast is available for XLA:TPU, XLA:GPU"
    self._enabled = enabled
    self._xla_device = xm.xla_device_hw(device)  # 'TPU' in the emulation
    if dtype is None:
      dtype = torch.bfloat16
    if dtype != torch.bfloat16:
      warnings.warn("In XLA:TPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                    "TPU Autocast only supports dtype of torch.bfloat16 currently.")
      enabled = False
    self._dtype = dtype
    super().__init__("xla", enabled=enabled, dtype=self._dtype, cache_enabled=cache_enabled)

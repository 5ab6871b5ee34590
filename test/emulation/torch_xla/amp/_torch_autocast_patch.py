"""torch.autocast('xla', ...) on torch 1.13, which only knows 'cuda' and 'cpu'.

torch >= 2 (the torch that torch_xla pairs with) accepts device_type 'xla'; XLA autocast is bf16 on
TPU. The emulation runs an 'xla' autocast region as a CPU bf16 autocast region; any other dtype
warns and disables autocast (the XLA:TPU rule of torch_xla/amp/autocast_mode.py, v2.3.0..v2.9.0).
Not verified against torch's own autocast_mode.py for float16 on 'xla'.
"""
import warnings

import torch

_Base = torch.amp.autocast_mode.autocast


class autocast(_Base):

  def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
    self._emulated_xla = device_type == 'xla'
    if self._emulated_xla:
      dtype = torch.bfloat16 if dtype is None else dtype
      if dtype != torch.bfloat16:
        if enabled:
          warnings.warn("In XLA:TPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                        "TPU Autocast only supports dtype of torch.bfloat16 currently.")
        enabled = False
        dtype = torch.bfloat16  # torch 1.13's CPU autocast rejects any other dtype even when disabled
      device_type = 'cpu'
    super().__init__(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


if not getattr(torch.autocast, '_torch_xla_emulated', False):
  autocast._torch_xla_emulated = True
  torch.autocast = autocast
  torch.amp.autocast = autocast

"""torch_xla/amp/grad_scaler.py (v2.3.0:8 .. v2.8.0; absent at v2.9.0): a torch.cuda.amp.GradScaler
whose inf checks stay on the device. On CPU torch 1.13 the CUDA scaler disables itself, so the
emulation scales on the CPU with the same arithmetic (scale, unscale_, inf check, update)."""
from .. import _emu

_emu.absent_module('torch_xla.amp.grad_scaler', until='2.9')

import torch  # noqa: E402


class GradScaler(torch.cuda.amp.GradScaler):

  def __init__(self, init_scale=2.**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
               enabled=True, use_zero_grad=False):
    super().__init__(init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                     growth_interval=growth_interval, enabled=False)
    self._enabled = enabled
    self._scale_value = float(init_scale) if enabled else 1.0
    self._growth_factor, self._backoff_factor, self._growth_interval = growth_factor, backoff_factor, growth_interval
    self._growth = 0
    self._unscaled = set()
    self._found_inf = {}

  def scale(self, outputs):
    if not self._enabled:
      return outputs
    return outputs * self._scale_value

  def unscale_(self, optimizer):
    if not self._enabled or id(optimizer) in self._unscaled:
      return
    inf = False
    for g in optimizer.param_groups:
      for p in g['params']:
        if p.grad is not None:
          p.grad.div_(self._scale_value)
          inf = inf or not bool(torch.isfinite(p.grad).all())
    self._unscaled.add(id(optimizer))
    self._found_inf[id(optimizer)] = inf

  def step(self, optimizer, *args, **kwargs):
    if not self._enabled:
      return optimizer.step(*args, **kwargs)
    self.unscale_(optimizer)
    if not self._found_inf.get(id(optimizer)):
      return optimizer.step(*args, **kwargs)

  def update(self, new_scale=None):
    if not self._enabled:
      return
    if new_scale is not None:
      self._scale_value = float(new_scale)
    elif any(self._found_inf.values()):
      self._scale_value *= self._backoff_factor
      self._growth = 0
    else:
      self._growth += 1
      if self._growth == self._growth_interval:
        self._scale_value *= self._growth_factor
        self._growth = 0
    self._unscaled.clear()
    self._found_inf.clear()

  def get_scale(self):
    return self._scale_value if self._enabled else 1.0

  def is_enabled(self):
    return self._enabled

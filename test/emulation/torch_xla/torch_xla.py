"""torch_xla/torch_xla.py (the functions `import torch_xla` exports)."""
import contextlib
import functools
from typing import Callable, List, Tuple

import torch

from . import _emu

__all__ = ['device', 'devices', 'real_devices', 'device_count']


def device(index: int = None) -> torch.device:
  # torch_xla/torch_xla.py:7 at v2.3.0 (xm.xla_device(index)); :19 at v2.9.0
  if index is None:
    return torch.device(_emu.STATE.default_device)
  devs = devices()
  if index > len(devs):  # the source compares with `>`, so index == len passes and fails below
    raise IndexError('Device index {} out of range in {}'.format(index, [str(d) for d in devs]))
  _emu.STATE.default_device = devs[index]
  return devs[index]


def devices() -> List[torch.device]:
  # torch_xla/torch_xla.py:24 at v2.3.0, :52 at v2.9.0
  return [torch.device('xla', i) for i in range(_emu.NUM_DEVICES)]


def real_devices() -> List[str]:
  # torch_xla/torch_xla.py:34 at v2.3.0, :62 at v2.9.0 (the emulated device reports as CPU)
  return [f'CPU:{i}' for i in range(_emu.NUM_DEVICES)]


def device_count() -> int:
  # torch_xla/torch_xla.py:45 at v2.3.0, :73 at v2.9.0
  return len(real_devices())


if _emu.at('2.4'):
  __all__ += ['sync', 'step']

  if _emu.at('2.8'):

    def sync(wait: bool = False, reset_scope: bool = True):
      # torch_xla/torch_xla.py:78 at v2.8.0/v2.9.0
      _sync()
  elif _emu.at('2.5'):

    def sync(wait: bool = False):
      # torch_xla/torch_xla.py:62 at v2.5.0
      _sync()
  else:

    def sync():
      # torch_xla/torch_xla.py:52 at v2.4.0 (no arguments)
      _sync()

  def step():
    # torch_xla/torch_xla.py:58 at v2.4.0 (context manager), :78 at v2.5.0 (= compile())
    return _compile_ctx()


def _sync():
  """_xla_step_marker + xm._run_step_closures (torch_xla/torch_xla.py:62-75 at v2.5.0)."""
  _emu.STATE.syncs += 1
  if _emu.STATE.pending:
    _emu.compiled()
  from .core import xla_model as xm
  xm._run_step_closures()


@contextlib.contextmanager
def _compile_ctx():
  _sync()
  try:
    yield
  finally:
    _sync()


if _emu.at('2.5'):
  __all__ += ['compile', 'manual_seed', 'launch']

  def _compile(f, name):
    if f is None:
      return _compile_ctx()

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
      with _compile_ctx():
        return f(*args, **kwargs)

    return wrapper

  if _emu.at('2.8'):

    def compile(f: Callable = None, full_graph: bool = False, name: str = None, max_different_graphs: int = None):
      # torch_xla/torch_xla.py:114 at v2.8.0/v2.9.0: a sync before and after `f`
      return _compile(f, name)
  else:

    def compile(f: Callable = None, full_graph: bool = False, name: str = None,
                num_different_graphs_allowed: int = None):
      # torch_xla/torch_xla.py:93 at v2.5.0..v2.7.0
      return _compile(f, name)

  def manual_seed(seed, device=None):
    # torch_xla/torch_xla.py:200 at v2.5.0, :221 at v2.9.0
    from .core import xla_model as xm
    xm.set_rng_state(seed, device)

  def launch(fn: Callable, args: Tuple = (), start_method: str = 'spawn', debug_single_process: bool = False):
    # torch_xla/torch_xla.py:212 at v2.5.0, :233 at v2.9.0
    import torch.distributed as dist
    from . import runtime as xr
    from .distributed import xla_multiprocessing as xmp
    if xr.is_spmd():
      raise NotImplementedError('launch function does not support SPMD at this time')
    nprocs = 1 if debug_single_process else None
    if dist.is_torchelastic_launched():
      import os
      fn(int(os.environ['LOCAL_RANK']), *args)
    else:
      xmp.spawn(fn, args=args, nprocs=nprocs, start_method=start_method)

"""torch_xla/distributed/xla_multiprocessing.py -> torch_xla/_internal/pjrt.py spawn.
The emulation has one device per host, so "all devices" is one process: fn runs in this process
(the real PJRT runtime starts a child process per device; pickling of fn is not checked)."""
import logging
import os

from .. import _emu
from . import xla_backend  # noqa: F401  (_internal/pjrt.py:14 at v2.3.0..v2.9.0 imports it)


def spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method='spawn'):
  # xla_multiprocessing.py:10 (v2.3.0, v2.9.0) -> pjrt.spawn (_internal/pjrt.py:186 at v2.9.0)
  if nprocs == 1:
    return _run(fn, args)
  elif nprocs is not None:
    if _emu.at('2.6'):
      # _internal/pjrt.py:206-209 at v2.6.0..v2.9.0
      raise ValueError(
          'Unsupported nprocs (%d). Please use nprocs=1 or None (default). If None, spawn will use all available devices. Use the environment variable X_NUM_DEVICES (where X is CPU, TPU, NEURONCORE, etc) to limit the number of devices used.'
          % nprocs)
    # _internal/pjrt.py:208-209 at v2.3.0..v2.5.0
    logging.warning('Unsupported nprocs (%d), ignoring...' % nprocs)
  if start_method not in ('spawn', 'fork', 'forkserver'):
    raise ValueError(f"cannot find context for '{start_method}'")
  return _run(fn, args)


def _run(fn, args):
  # _SpawnFn.__call__ (pjrt.py:183 at v2.9.0): fn(global_ordinal, *args)
  from .. import runtime as xr
  os.environ.setdefault('PJRT_LOCAL_PROCESS_RANK', '0')
  os.environ.setdefault('PJRT_LOCAL_PROCESS_COUNT', '1')
  fn(xr.global_ordinal(), *args)


class MpModelWrapper(object):
  # xla_multiprocessing.py MpModelWrapper (v2.3.0)

  def __init__(self, model):
    self._model = model

  def to(self, device):
    return self._model.to(device)


class MpSerialExecutor(object):
  # xla_multiprocessing.py MpSerialExecutor (v2.3.0)

  def run(self, fn):
    return fn()

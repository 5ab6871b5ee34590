"""State and helpers of the test-only torch_xla emulation (not part of torch_xla's API).

The emulation runs on CPU PyTorch 1.13. XLA devices are real `torch.device('xla', n)` objects; a
TorchFunctionMode installed at `import torch_xla` maps them to the CPU for every torch function and
Tensor method (factories with `device=`, `Tensor.to`, `nn.Module.to`), so user code computes on the
CPU. Tensors created on or moved to an XLA device are tagged, and the tag follows them through the
ops the mode sees; that is how the emulation tells "XLA data" from CPU data for its preconditions.

TORCH_XLA_EMULATED_VERSION (default 2.9) picks the torch_xla release whose Python API is emulated.
"""
import os
import threading

import torch
from torch.overrides import TorchFunctionMode

SUPPORTED = ('2.3', '2.4', '2.5', '2.6', '2.7', '2.8', '2.9')
VERSION = os.environ.get('TORCH_XLA_EMULATED_VERSION', '2.9')
if VERSION not in SUPPORTED:
  raise ImportError(f'TORCH_XLA_EMULATED_VERSION={VERSION!r}: emulated versions are {", ".join(SUPPORTED)}')

# Devices this process addresses (PJRT: one per process under xmp.spawn); the emulation has one.
NUM_DEVICES = 1


def _v(s):
  a, b = s.split('.')
  return int(a), int(b)


def at(version):
  """True when the emulated torch_xla release is `version` or newer."""
  return _v(VERSION) >= _v(version)


def absent_module(name, since=None, until=None):
  """Raises the ImportError the real package raises for a module it does not ship in VERSION."""
  if (since and not at(since)) or (until and at(until)):
    raise ModuleNotFoundError(f"No module named '{name}' (not in torch_xla {VERSION})", name=name)


class State:
  """Process-wide emulated runtime state (the C++ _XLAC state in the real package)."""

  def __init__(self):
    self.computation_cache_initialized = False  # _xla_computation_cache_is_initialized
    self.rng_seed = 101  # XLA's default RNG seed (xla_graph_executor.cpp kRngSeed... set by set_rng_state)
    self.step_closures = []
    self.async_step_closures = []
    self.syncs = 0
    self.pending = False  # XLA ops traced since the last sync (a sync then compiles a graph)
    self.default_device = torch.device('xla', 0)
    self.lock = threading.Lock()


STATE = State()


def compiled():
  """Marks that a graph was compiled (a host read of XLA data, or a sync with traced ops pending)."""
  STATE.computation_cache_initialized = True
  STATE.pending = False


def is_xla_device(d):
  if isinstance(d, torch.device):
    return d.type == 'xla'
  if isinstance(d, str):
    return d.split(':')[0] == 'xla'
  return False


def _cpu(d):
  return torch.device('cpu') if is_xla_device(d) else d


_TAG = '_torch_xla_emulated'


def tag(t):
  if isinstance(t, torch.Tensor):
    try:
      setattr(t, _TAG, True)
    except Exception:  # pragma: no cover - tensors without __dict__
      pass
  return t


def is_tagged(t):
  return isinstance(t, torch.Tensor) and getattr(t, _TAG, False)


def _walk(obj, fn):
  if isinstance(obj, (list, tuple)):
    for o in obj:
      _walk(o, fn)
  elif isinstance(obj, dict):
    for o in obj.values():
      _walk(o, fn)
  else:
    fn(obj)


def _any_tagged(args, kwargs):
  found = [False]

  def f(o):
    if is_tagged(o):
      found[0] = True

  _walk(args, f)
  _walk(kwargs, f)
  return found[0]


# Host reads: the real package compiles and runs the pending graph for these.
_HOST_READS = {'item', 'tolist', 'numpy', '__bool__', '__int__', '__float__', '__index__', '__format__', '__repr__'}


class XlaToCpuMode(TorchFunctionMode):
  """Maps every XLA device argument to the CPU and tags the results that live on the XLA device."""

  def __torch_function__(self, func, types, args=(), kwargs=None):
    kwargs = kwargs or {}
    name = getattr(func, '__name__', '')
    to_xla = False
    if 'device' in kwargs and is_xla_device(kwargs['device']):
      kwargs = dict(kwargs, device=torch.device('cpu'))
      to_xla = True
    if name in ('to', 'cuda') or (args and any(is_xla_device(a) for a in args)):
      if any(is_xla_device(a) for a in args):
        to_xla = True
        args = tuple(_cpu(a) for a in args)
      if name == 'to' and to_xla:
        kwargs = dict(kwargs, copy=True)  # a move to the device makes a new tensor, as on XLA
    tagged_in = _any_tagged(args, kwargs)
    if name in _HOST_READS and tagged_in:
      compiled()
    if name in ('to', 'cpu') and tagged_in and not to_xla:
      compiled()  # a device->host transfer executes the graph
      out = func(*args, **kwargs)
      if isinstance(out, torch.Tensor) and out is not args[0]:
        return out
      return out.clone() if isinstance(out, torch.Tensor) else out
    out = func(*args, **kwargs)
    if (to_xla or tagged_in) and name not in ('cpu',):
      _walk(out, tag)
      STATE.pending = True
    return out


MODE = XlaToCpuMode()


def install_mode():
  if getattr(install_mode, 'done', False):
    return
  MODE.__enter__()
  install_mode.done = True


def check_xla_device(device):
  """bridge::AtenDeviceToXlaDevice (torch_xla/csrc/aten_xla_bridge.cpp:373 at v2.9.0, same check at
  v2.3.0): XLA_CHECK_EQ(device.type(), at::kXLA) << device."""
  d = torch.device(device)
  if d.type != 'xla':
    raise RuntimeError(f'torch_xla/csrc/aten_xla_bridge.cpp:374 : Check failed: device.type() == at::kXLA '
                       f'({d.type.upper()} vs. XLA) {d}')
  return d

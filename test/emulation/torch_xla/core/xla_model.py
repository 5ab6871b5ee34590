"""torch_xla/core/xla_model.py. Line numbers: v2.3.0 (23:) and v2.9.0 (29:) unless another tag is named."""
import io
import logging
import sys
import warnings
from typing import Any, Callable, Dict, List, Optional

import torch

from .. import _emu
from .. import runtime

REDUCE_SUM = 'sum'
REDUCE_MUL = 'mul'
REDUCE_AND = 'and'
REDUCE_OR = 'or'
REDUCE_MIN = 'min'
REDUCE_MAX = 'max'


def _deprecated_alias(new, message):
  """torch_xla/experimental/deprecation.py:9 at v2.5.0: `deprecated(module, new, old_name)`; xla_model
  passes the message as `old_name`, so the log line reads '<module>.<message> is deprecated. Use ...'."""
  warned = [False]

  def wrapped(*args, **kwargs):
    if not warned[0]:
      logging.warning(f'{__name__}.{message} is deprecated. Use {new.__module__}.{new.__name__} instead.')
      warned[0] = True
    return new(*args, **kwargs)

  wrapped.__name__ = new.__name__
  return wrapped


def _typing_deprecated(msg):
  """typing_extensions.deprecated (xla_model.py:18 at v2.8.0): DeprecationWarning on each call."""

  def deco(fn):

    def wrapped(*args, **kwargs):
      warnings.warn(msg, category=DeprecationWarning, stacklevel=2)
      return fn(*args, **kwargs)

    wrapped.__name__ = fn.__name__
    wrapped.__wrapped__ = fn
    return wrapped

  return deco


def _parse_xla_device(device):
  # torch_xla/_internal/utils.py parse_xla_device; 23:78
  import re
  m = re.match(r'([A-Z]+):(\d+)$', device)
  if m:
    return (m.group(1), int(m.group(2)))


if not _emu.at('2.5'):

  def xrt_world_size(defval=1):
    # 23:117
    return runtime.world_size()

  def get_ordinal(defval=0):
    # 23:135
    return runtime.global_ordinal()

  def parse_xla_device(device):
    # 23:78
    return _parse_xla_device(device)
elif not _emu.at('2.7'):
  # xla_model.py:43-51 at v2.5.0/v2.6.0: deprecated aliases, removed in 2.7 (absent at v2.7.0)
  xrt_world_size = _deprecated_alias(runtime.world_size, 'xrt_world_size() will be removed in release 2.7.')
  get_ordinal = _deprecated_alias(runtime.global_ordinal, 'xla_model.get_ordinal() will be removed in release 2.7.')
  parse_xla_device = _deprecated_alias(_parse_xla_device, 'xla_model.parse_xla_device() will be removed in release 2.7.')


def is_xla_tensor(tensor):
  # 23:74 `tensor.device.type == 'xla'`; here: the emulation's XLA tag
  return _emu.is_tagged(tensor)


if _emu.at('2.8'):

  def get_xla_supported_devices(max_devices: Optional[int] = None) -> List[str]:
    # 29:69 (devkind removed in 2.8)
    n = _emu.NUM_DEVICES
    return [f'xla:{i}' for i in range(min(n, max_devices) if max_devices else n)]
else:

  def get_xla_supported_devices(devkind=None, max_devices=None):
    # 23:84
    if devkind is not None:
      warnings.warn("`devkind` argument is deprecated and will be removed in a future release.")
    n = _emu.NUM_DEVICES
    return [f'xla:{i}' for i in range(min(n, max_devices) if max_devices else n)]


def get_local_ordinal(*args) -> int:
  # 23:155 (defval arg), 29:86
  return runtime.local_ordinal()


def is_master_ordinal(local: bool = True) -> bool:
  # 23:171, 29:97
  ordinal = get_local_ordinal() if local else runtime.global_ordinal()
  return ordinal == 0


def master_print(*args, fd=sys.stdout, local=False, flush=False):
  # 23:187, 29:113
  if is_master_ordinal(local=local):
    print(*args, file=fd, flush=flush)


def _xla_device(n=None, devkind=None):
  import torch_xla
  return torch_xla.device(n) if n is not None else torch.device(_emu.STATE.default_device)


if _emu.at('2.8'):
  # 29:121 @deprecated("Use torch_xla.device instead")
  xla_device = _typing_deprecated('Use torch_xla.device instead')(_xla_device)
else:
  # 23:192
  xla_device = _xla_device
xla_device.__name__ = 'xla_device'


def xla_real_devices(devices=None):
  # 23:223, 29:148
  if not devices:
    devices = get_xla_supported_devices()
  return [_xla_real_device(d) for d in devices]


def _xla_real_device(device):
  # 29:140
  import re
  m = re.match(r'xla:(\d+)$', str(device))
  if not m:
    raise RuntimeError('Invalid device format: {}'.format(str(device)))
  return f'CPU:{m.group(1)}'


def xla_device_hw(device):
  # 23:238, 29:163. The emulated device is hardware 'TPU' (what fixes target).
  _xla_real_device(device)
  return 'TPU'


if _emu.at('2.6'):

  def xla_device_kind(device=None) -> str:
    # xla_model.py:207 at v2.6.0, 29:177 (absent at v2.5.0)
    return 'TPU v4 (emulated)'


def _run_step_closures():
  # 23:1030, 29:1011
  st = _emu.STATE
  closures, st.step_closures = st.step_closures, []
  aclosures, st.async_step_closures = st.async_step_closures, []
  for c in aclosures + closures:
    c()


def add_step_closure(closure: Callable[..., Any], args=(), run_async: bool = False):
  # 23:998, 29:977
  target = _emu.STATE.async_step_closures if run_async else _emu.STATE.step_closures
  target.append(lambda a=args: closure(*a))


def _mark_step(wait=False, reset_scope=True):
  from .. import torch_xla as tx
  tx._sync()


if _emu.at('2.8'):

  @_typing_deprecated('Use torch_xla.sync instead')
  def mark_step(wait: bool = False, reset_scope: bool = True):
    # 29:1030
    _mark_step(wait)
elif _emu.at('2.4'):

  def mark_step(wait: bool = False, reset_scope: bool = True):
    # xla_model.py:1048 at v2.4.0
    _mark_step(wait)
else:

  def mark_step(wait=False):
    # 23:1049
    _mark_step(wait)


def wait_device_ops(devices=[]):
  # 23:1116, 29:1084
  pass


def all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
  # 23:451, 29:396. One replica: the reduction of one value is the value (times scale).
  if reduce_type not in (REDUCE_SUM, REDUCE_MUL, REDUCE_AND, REDUCE_OR, REDUCE_MIN, REDUCE_MAX):
    raise ValueError(f'Invalid reduce type: {reduce_type}')
  if isinstance(inputs, torch.Tensor):
    return inputs * scale if scale != 1.0 else inputs.clone()
  for t in inputs:
    if scale != 1.0:
      t.mul_(scale)
  return inputs


def all_gather(value, dim=0, groups=None, output=None, pin_layout=True):
  # 23:550, 29:501 (world size 1)
  result = value.clone()
  if output is not None:
    output.copy_(result)
    return output
  return result


def collective_permute(value, pairs):
  # 23:778, 29:747
  return value.clone()


def reduce_gradients(optimizer, groups=None, pin_layout=True):
  # 23:1126, 29:1129: all_reduce(REDUCE_SUM, grads, scale=1/world_size) only when world_size > 1
  count = runtime.world_size()
  if count > 1:  # pragma: no cover - the emulation has one replica
    grads = [p.grad for g in optimizer.param_groups for p in g['params'] if p.grad is not None]
    all_reduce(REDUCE_SUM, grads, scale=1.0 / count, groups=groups, pin_layout=pin_layout)


def optimizer_step(optimizer, barrier: bool = False, optimizer_args: Dict = {}, groups=None, pin_layout: bool = True):
  # 23:1151, 29:1169
  reduce_gradients(optimizer, groups=groups, pin_layout=pin_layout)
  loss = optimizer.step(**optimizer_args)
  if barrier:
    _mark_step()
  return loss


def _to_cpu(data):
  if isinstance(data, torch.Tensor):
    return data.detach().clone() if _emu.is_tagged(data) else data
  if isinstance(data, (list, tuple)) and not hasattr(data, '_fields'):
    return type(data)(_to_cpu(d) for d in data)
  if isinstance(data, dict):
    return type(data)((k, _to_cpu(v)) for k, v in data.items())
  return data


def save(data, file_or_path, master_only=True, global_master=False):
  # 23:1187, 29:1210 (no rendezvous since pytorch/xla#4926)
  should_write_data = not master_only or is_master_ordinal(local=not global_master)
  if should_write_data:
    if _emu.STATE.pending:
      _emu.compiled()  # _maybe_convert_to_cpu syncs the tensors (_xla_sync_multi)
    torch.save(_to_cpu(data), file_or_path)


def send_cpu_data_to_device(datas, device, input_sharding=None):
  # 23:1239, 29:1269 -> _xla_tensors_from_aten -> GetXlaDevices -> bridge::AtenDeviceToXlaDevice
  dev = _emu.check_xla_device(str(device))

  def move(v):
    if isinstance(v, torch.Tensor) and not _emu.is_tagged(v):
      return v.to(dev)
    if isinstance(v, (list, tuple)):
      moved = [move(x) for x in v]
      return type(v)(*moved) if hasattr(v, '_fields') else type(v)(moved)
    if isinstance(v, dict):
      return type(v)((k, move(x)) for k, x in v.items())
    return v

  if type(datas) is torch.Tensor:
    datas = [datas]
  return move(datas)


def rendezvous(tag, payload=b'', replicas=[]):
  # 23:1314, 29:1362 (one replica: its own payload)
  return [payload]


def mesh_reduce(tag, data, reduce_fn):
  # 23:1362, 29:1421
  cpu_data = _to_cpu(data)
  bio = io.BytesIO()
  torch.save(cpu_data, bio)
  xldata = [torch.load(io.BytesIO(x)) for x in rendezvous(tag, bio.getvalue())]
  return reduce_fn(xldata) if xldata else cpu_data


def set_rng_state(seed, device=None):
  # 23:1387, 29:1453. The emulated device RNG is the CPU generator.
  _emu.STATE.rng_seed = int(seed)
  torch.manual_seed(int(seed))


def get_rng_state(device=None):
  # 23:1400, 29:1466
  return _emu.STATE.rng_seed


if _emu.at('2.5'):

  def get_memory_info(device=None):
    # xla_model.py:1516 at v2.5.0 (device optional), 29:1508; keys: init_python_bindings.cpp
    # GetMemoryInfo (peak_bytes_used from v2.6.0:831)
    info = {'bytes_used': 0, 'bytes_limit': 16 << 30}
    if _emu.at('2.6'):
      info['peak_bytes_used'] = 0
    return info
elif _emu.at('2.4'):

  def get_memory_info(device):
    # xla_model.py:1442 at v2.4.0 (device required); bytes_used/bytes_limit (init_python_bindings.cpp:755)
    return {'bytes_used': 0, 'bytes_limit': 16 << 30}
else:

  def get_memory_info(device):
    # 23:1437; init_python_bindings.cpp:721 at v2.3.0: kb_free / kb_total
    return {'kb_free': 16 << 20, 'kb_total': 16 << 20}


def optimization_barrier_(tensors):
  # 23:1450, 29:1528
  pass


def broadcast_master_param(model):
  # 23:1461, 29:1539 (one replica: nothing to broadcast), then a step barrier
  _mark_step()


def get_stablehlo(tensors=None):
  raise NotImplementedError('torch_xla emulation: get_stablehlo is not emulated')

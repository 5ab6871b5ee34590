"""torch_xla/runtime.py. Line numbers: v2.3.0 (23:) and v2.9.0 (29:)."""
import functools
import os
import warnings
from typing import Optional

from . import _emu


def _requires_pjrt(fn):
  # 23:82 @requires_pjrt (removed in 2.5); the emulation always "uses PJRT" (PJRT_DEVICE defaults to CPU)
  return fn


def device_type() -> Optional[str]:
  # 23:63, 29:74
  return os.environ.get('PJRT_DEVICE', 'CPU').split('_')[0]


if not _emu.at('2.5'):

  def using_pjrt() -> bool:
    # 23:73 (removed in 2.5)
    return True


def is_bf16_supported():
  # 23:100, 29:86
  return True


if not _emu.at('2.8'):

  def xla_device(n=None, devkind=None):
    # 23:111, absent at v2.8.0
    import torch_xla
    return torch_xla.device(n)


def local_process_count() -> int:
  # 23:136, 29:96
  return int(os.environ.get('PJRT_LOCAL_PROCESS_COUNT', 1))


def global_device_count() -> int:
  # 23:142, 29:101
  return _emu.NUM_DEVICES


def world_size() -> int:
  # 23:148, 29:106 (1 when there is no replication)
  return _emu.NUM_DEVICES


def local_device_count() -> int:
  # 23:156, 29:118
  return local_process_count() * addressable_device_count()


def addressable_device_count() -> int:
  # 23:165, 29:126
  return _emu.NUM_DEVICES


def global_ordinal() -> int:
  # 23:171, 29:131
  return int(os.environ.get('_TORCH_XLA_EMULATED_ORDINAL', 0))


def local_ordinal() -> int:
  # 23:181, 29:143
  return int(os.environ.get('PJRT_LOCAL_PROCESS_RANK', 0)) * addressable_device_count() + 0


def process_index() -> int:
  # 23:191, 29:152
  return 0


def process_count() -> int:
  # 23:196, 29:156
  return 1


def host_index() -> int:
  # 23:201, 29:160
  return 0


@functools.lru_cache()
def global_runtime_device_count() -> int:
  # 23:224, 29:178
  return _emu.NUM_DEVICES


def addressable_runtime_device_count() -> int:
  # 23:230, 29:183
  return _emu.NUM_DEVICES


def use_spmd(auto: Optional[bool] = False):
  # 23:240, 29:189
  if os.environ.get("XLA_USE_SPMD") is not None:
    warnings.warn("XLA_USE_SPMD is being deprecated. "
                  "Use torch_xla.runtime.use_spmd() "
                  "without setting XLA_USE_SPMD env-var.")
  os.environ["XLA_USE_SPMD"] = "1"
  if auto:
    os.environ["XLA_AUTO_SPMD"] = "1"


def is_spmd():
  # 23:264, 29:231
  return os.environ.get('XLA_USE_SPMD', '0').lower() in ('1', 'true')


def get_master_ip() -> str:
  # 23:271, 29:237
  raise RuntimeError(f'IP discovery not supported for device: {device_type()}')


def initialize_cache(path: str, readonly: bool = False):
  # 23:282, 29:250: asserts before any computation has compiled a graph
  assert not _emu.STATE.computation_cache_initialized, "Computation cache has already been initialized"
  os.environ['XLA_PERSISTENT_CACHE_PATH'] = path
  os.environ['XLA_PERSISTENT_CACHE_READ_ONLY'] = '1' if readonly else '0'


if _emu.at('2.7'):

  def get_num_cached_compilation_graph():
    # runtime.py:300 at v2.7.0, 29:267
    return 0

"""torch_xla/backends/__init__.py (v2.8.0..v2.9.0; absent at v2.7.0)."""
import logging

from .. import _emu

_emu.absent_module('torch_xla.backends', since='2.8')

_PRECISION = ['default']
__all__ = ["set_mat_mul_precision", "get_mat_mul_precision"]


def set_mat_mul_precision(precision) -> None:
  # backends/__init__.py:41 at v2.9.0
  if precision not in ['default', 'high', 'highest']:
    raise ValueError(f"Invalid precision: {precision}. Must be one of default, high, highest.")
  logging.getLogger(__name__).warning('Setting mat mul precision multiple times is not recommended. If you need to '
                                      'do so, please empirically verify that the precision setting is behaving as '
                                      'expected.')
  _PRECISION[0] = precision


def get_mat_mul_precision():
  # backends/__init__.py:83 at v2.9.0
  return _PRECISION[0]

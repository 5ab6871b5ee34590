"""torch_xla/experimental/eager.py (v2.4.0..v2.9.0)."""
import contextlib
import logging

from .. import _emu

_emu.absent_module('torch_xla.experimental.eager', since='2.4')

_EAGER = [False]


def eager_mode(enable: bool):
  # eager.py:7 at v2.4.0, :8 at v2.9.0
  _EAGER[0] = bool(enable)


def is_eager_mode() -> bool:
  return _EAGER[0]


@contextlib.contextmanager
def eager_mode_context(enable: bool):
  saved = is_eager_mode()
  eager_mode(enable)
  try:
    yield saved
  finally:
    eager_mode(saved)


if not _emu.at('2.7'):

  def compile(func):
    # eager.py:34 at v2.4.0; :35 at v2.5.0 logs a deprecation (removed at v2.7.0)
    import torch_xla
    if _emu.at('2.5'):
      logging.warning('torch_xla.experimental.compile is deprecated. Use torch_xla.compile instead.')
      return torch_xla.compile(func)
    import functools

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
      with torch_xla.step():
        return func(*args, **kwargs)

    return wrapper

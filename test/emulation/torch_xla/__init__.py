"""Test-only emulation of torch_xla's Python API on CPU PyTorch 1.13 (see _emu.py and README.md).

Follows torch_xla/__init__.py of pytorch/xla at the tag TORCH_XLA_EMULATED_VERSION selects.
"""
import os
import warnings

import torch

from . import _emu

__version__ = _emu.VERSION + '.0+emulated'


def _check_deprecated_env_var():
  # torch_xla/__init__.py:183 at v2.5.0 (the list includes XLA_USE_32BIT_LONG only in 2.5);
  # :175 at v2.9.0 ['XLA_USE_FP16', 'XLA_DOWNCAST_FP16']. Absent before 2.5 (v2.4.0 has no such check).
  if not _emu.at('2.5'):
    return
  deprecated_env_vars = ['XLA_USE_FP16', 'XLA_DOWNCAST_FP16']
  if _emu.VERSION == '2.5':
    deprecated_env_vars.append('XLA_USE_32BIT_LONG')
  for env_var in deprecated_env_vars:
    if os.environ.get(env_var):
      warnings.warn(f"The environment variable '{env_var}' is deprecated "
                    "Please update your code to avoid using it.")


_check_deprecated_env_var()
_emu.install_mode()

# torch.autocast('xla', ...) is handled by torch >= 2 itself; torch 1.13 rejects 'xla'.
from .amp import _torch_autocast_patch  # noqa: E402,F401

# torch_xla/__init__.py:197 at v2.3.0, :268 at v2.9.0: `from .torch_xla import *`
from .torch_xla import *  # noqa: E402,F401,F403
from . import torch_xla as _tx  # noqa: E402

# These submodules are imported by torch_xla/__init__.py (directly or through .torch_xla), so
# `import torch_xla` makes `torch_xla.runtime` and `torch_xla.core.xla_model` reachable.
from . import runtime  # noqa: E402,F401
from .core import xla_model as _xm  # noqa: E402,F401

if _emu.at('2.5'):
  # torch_xla/torch_xla.py imports xla_multiprocessing from v2.5.0 (line 14), whose _internal/pjrt.py:14
  # imports torch_xla.distributed.xla_backend: `import torch_xla` registers the 'xla' backend from 2.5.
  from .distributed import xla_multiprocessing as _xmp  # noqa: E402,F401

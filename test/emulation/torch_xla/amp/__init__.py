"""torch_xla/amp/__init__.py: autocast (v2.3.0..v2.9.0), GradScaler (v2.3.0..v2.8.0, removed at v2.9.0)."""
from .. import _emu
from .autocast_mode import autocast  # noqa: F401

if not _emu.at('2.9'):
  from .grad_scaler import GradScaler  # noqa: F401

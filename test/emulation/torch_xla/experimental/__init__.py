"""torch_xla/experimental/__init__.py: empty at v2.3.0; eager_mode/compile/is_eager_mode/eager_mode_context
from v2.4.0; `compile` (deprecated at v2.5.0/v2.6.0) gone at v2.7.0."""
from .. import _emu

if _emu.at('2.4'):
  from .eager import eager_mode, is_eager_mode, eager_mode_context  # noqa: F401
  if not _emu.at('2.7'):
    from .eager import compile  # noqa: F401

"""torch_xla/experimental/pjrt.py (v2.3.0, v2.4.0; absent at v2.5.0): re-exports torch_xla.runtime."""
from .. import _emu

_emu.absent_module('torch_xla.experimental.pjrt', until='2.5')
from ..runtime import *  # noqa: E402,F401,F403

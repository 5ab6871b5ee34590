"""torch_xla/experimental/xla_sharding.py (v2.3.0, v2.4.0; absent at v2.5.0): moved to torch_xla.distributed.spmd."""
from .. import _emu

_emu.absent_module('torch_xla.experimental.xla_sharding', until='2.5')
from ..distributed.spmd import *  # noqa: E402,F401,F403

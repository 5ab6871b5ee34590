"""torch_xla/distributed/xla_backend.py (v2.3.0 / v2.9.0): registers the 'xla' process-group
backend and the 'xla://' init method. Emulated over gloo on the CPU."""
import datetime

import torch.distributed as dist

from .. import _emu
from .. import runtime as xr


def _create_xla_process_group(prefix_store, rank, size, timeout):
  # xla_backend.py:12 at v2.9.0
  assert not xr.is_spmd(), "XLA backend is not supported with SPMD. Please use a CPU process group instead."
  return dist.ProcessGroupGloo(prefix_store, rank, size, timeout)


def _register_xla_backend():
  # xla_backend.py:18 at v2.9.0: dist.Backend.register_backend('xla', _create_xla_process_group, devices='xla')
  # (torch 1.13's register_backend has no `devices` parameter)
  if not hasattr(dist.Backend, 'XLA'):
    dist.Backend.register_backend('xla', _create_xla_process_group)


def _pjrt_rendezvous_handler(url, timeout=datetime.timedelta(seconds=300), **kwargs):
  # _internal/rendezvous.py pjrt_rendezvous_handler (v2.9.0): a TCPStore on MASTER_ADDR/MASTER_PORT,
  # rank = xr.global_ordinal(), world size = xr.world_size()
  import os
  master_ip = os.environ.get('MASTER_ADDR') or 'localhost'
  master_port = int(os.environ.get('MASTER_PORT', 12355))
  store = dist.TCPStore(master_ip, master_port, xr.process_count(), is_master=xr.process_index() == 0,
                        timeout=timeout)
  yield (store, xr.global_ordinal(), xr.world_size())


_register_xla_backend()
try:
  dist.register_rendezvous_handler('xla', _pjrt_rendezvous_handler)
except ValueError:
  pass  # already registered in this process

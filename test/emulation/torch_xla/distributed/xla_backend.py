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
  if dist.is_torchelastic_launched():
    # rendezvous.py:25-32 at v2.9.0 (:20-23 at v2.3.0): under torchrun the handler sets up this process's chips,
    # pjrt.initialize_multiprocess(LOCAL_RANK, LOCAL_WORLD_SIZE) (pjrt.py:110-122 at v2.9.0: PJRT_LOCAL_PROCESS_RANK/COUNT),
    # so the group's rank and size are torchrun's (one host, one device per process: global ordinal = local rank).
    # The emulated runtime keeps one replica per process (xr.world_size() 1: xm collectives stay local).
    local_rank = int(os.environ['LOCAL_RANK'])
    local_world_size = int(os.environ['LOCAL_WORLD_SIZE'])
    os.environ.setdefault('PJRT_LOCAL_PROCESS_RANK', str(local_rank))
    os.environ.setdefault('PJRT_LOCAL_PROCESS_COUNT', str(local_world_size))
    os.environ['_TORCH_XLA_EMULATED_ORDINAL'] = str(local_rank)
    if os.environ.get('TORCHELASTIC_USE_AGENT_STORE') == 'True':
      # rendezvous.py:36-40 at v2.3.0: the agent's store, under this restart's prefix
      attempt = int(os.environ.get('TORCHELASTIC_RESTART_COUNT', 0))
      store = dist.PrefixStore(f'/worker/attempt_{attempt}',
                               dist.TCPStore(master_ip, master_port, local_world_size, is_master=False, timeout=timeout))
    else:
      store = dist.TCPStore(master_ip, master_port, local_world_size, is_master=local_rank == 0, timeout=timeout)
    yield (store, local_rank, local_world_size)
    return
  store = dist.TCPStore(master_ip, master_port, xr.process_count(), is_master=xr.process_index() == 0,
                        timeout=timeout)
  yield (store, xr.global_ordinal(), xr.world_size())


_register_xla_backend()
try:
  dist.register_rendezvous_handler('xla', _pjrt_rendezvous_handler)
except ValueError:
  pass  # already registered in this process

"""torch_xla/distributed/parallel_loader.py (v2.3.0 = 23:, v2.9.0 = 29:). Batches move synchronously
(no prefetch threads); each epoch ends with a step barrier as PerDeviceLoader.next does."""
import torch

from .. import _emu
from ..core import xla_model as xm


class PerDeviceLoader(object):
  # 23:20, 29:22

  def __init__(self, loader, device):
    self._loader = loader
    self._device = device
    self._it = None
    self._n = 0

  def __iter__(self):
    return self

  def __next__(self):
    return self.next()

  def __len__(self):
    return self._loader.per_device_samples()

  def next(self):
    # 23:37: with batches_per_execution=1 (_mark_step_batch_count 0) a barrier before every batch,
    # and one more when the loader is exhausted
    if self._it is None:
      self._it = iter(self._loader._loader)
    _barrier()
    try:
      batch = next(self._it)
    except StopIteration:
      _barrier()
      raise
    self._n += 1
    # ParallelLoader._worker -> xm.send_cpu_data_to_device (29:239); the real worker thread fails
    # on the first batch when the device is not an XLA device (bridge::AtenDeviceToXlaDevice).
    return xm.send_cpu_data_to_device(batch, self._device)[0] if isinstance(batch, torch.Tensor) else \
        xm.send_cpu_data_to_device(batch, self._device)


def _barrier():
  from .. import torch_xla as tx
  tx._sync()


class ParallelLoader(object):
  # 23:55, 29:59

  def __init__(self, loader, devices, batchdim=0, batches_per_execution=1, loader_prefetch_size=16,
               device_prefetch_size=8, host_to_device_transfer_threads=1, input_sharding=None):
    self._loader = loader
    self._devices = [torch.device(x) for x in devices]  # 23:92: an int becomes torch.device(int) = cuda:N
    self._batchdim = batchdim

  def per_device_loader(self, device):
    # 23:115
    return PerDeviceLoader(self, torch.device(device))

  def per_device_samples(self):
    # 23:129
    return len(self._loader) // len(self._devices)

  def close(self):
    pass


class MpDeviceLoader(object):
  # 23:186, 29:253

  def __init__(self, loader, device, **kwargs):
    self._loader = loader
    self._device = device
    self._parallel_loader_kwargs = kwargs

  def __iter__(self):
    parallel_loader = ParallelLoader(self._loader, [self._device], **self._parallel_loader_kwargs)
    return parallel_loader.per_device_loader(self._device)

  def __len__(self):
    return len(self._loader)

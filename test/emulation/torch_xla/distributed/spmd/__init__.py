"""torch_xla/distributed/spmd (v2.3.0 .. v2.9.0): Mesh, mark_sharding. Shardings are recorded, not applied."""
import numpy as np

from ... import _emu


class Mesh:
  # distributed/spmd/xla_sharding.py Mesh (v2.3.0)

  def __init__(self, device_ids, mesh_shape, axis_names=None):
    if not isinstance(device_ids, np.ndarray):
      device_ids = np.array(device_ids)
    assert len(device_ids) == int(np.prod(mesh_shape)), 'Number of device IDs must match mesh size'
    if axis_names is not None:
      assert len(mesh_shape) == len(axis_names), 'Number of axis names must match mesh dimensions'
    self.device_ids = device_ids
    self.mesh_shape = tuple(mesh_shape)
    self.axis_names = axis_names

  def size(self):
    return int(np.prod(self.mesh_shape))

  def shape(self):
    return dict(zip(self.axis_names or range(len(self.mesh_shape)), self.mesh_shape))


class ShardingSpec:

  def __init__(self, mesh, partition_spec, minibatch=False):
    self.mesh, self.partition_spec, self.minibatch = mesh, partition_spec, minibatch


def mark_sharding(t, mesh, partition_spec):
  # xla_sharding.py mark_sharding: len(partition_spec) must equal t.dim()
  assert len(partition_spec) == t.dim(), \
      f'Partition spec length ({len(partition_spec)}) should be equal to the input rank ({t.dim()}).'
  _emu.tag(t)
  return t


def clear_sharding(t):
  return t


def get_1d_mesh(axis_name=None):
  return Mesh(np.arange(_emu.NUM_DEVICES), (_emu.NUM_DEVICES,), (axis_name,) if axis_name else None)

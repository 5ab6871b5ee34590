"""torch_xla/experimental/distributed_checkpoint/__init__.py: CheckpointManager, SPMDSavePlanner,
SPMDLoadPlanner (v2.3.0..v2.9.0); prime_optimizer from v2.4.0 (util.py:7). The planners and the manager
are placeholders that record their arguments (torch 1.13 has no torch.distributed.checkpoint planners)."""
import torch

from ... import _emu


class SPMDSavePlanner:

  def __init__(self, *args, **kwargs):
    self.args, self.kwargs = args, kwargs


class SPMDLoadPlanner:

  def __init__(self, *args, **kwargs):
    self.args, self.kwargs = args, kwargs


class CheckpointManager:

  def __init__(self, path, save_interval, max_to_keep=0, max_pending_async=1, process_group=None, chkpt_on_preemption=True):
    self.path, self.save_interval = path, save_interval

  def should_save(self, step):
    return self.save_interval > 0 and step % self.save_interval == 0

  def save(self, step, state_dict, force=False):
    raise NotImplementedError('torch_xla emulation: CheckpointManager.save is not emulated')

  def restore(self, step, state_dict):
    raise NotImplementedError('torch_xla emulation: CheckpointManager.restore is not emulated')

  def get_tracked_steps(self):
    return []


if _emu.at('2.4'):

  def prime_optimizer(optimizer):
    # distributed_checkpoint/util.py:7 at v2.4.0: a step with zero gradients creates the state
    for group in optimizer.param_groups:
      for p in group['params']:
        if p.grad is None:
          p.grad = torch.zeros_like(p)
        else:
          p.grad.zero_()
    optimizer.step()
    return optimizer

"""torch_xla/amp/syncfree (v2.3.0..v2.9.0): Adam, AdamW, SGD that skip the step on found_inf without a
host sync. Emulated as the torch.optim classes (a `found_inf` kwarg to step() skips the step)."""
import torch


def _syncfree(base):

  class Opt(base):

    def step(self, closure=None, found_inf=None):
      if found_inf is not None and bool(found_inf):
        return None
      return super().step(closure)

  Opt.__name__ = base.__name__
  return Opt


Adam = _syncfree(torch.optim.Adam)
AdamW = _syncfree(torch.optim.AdamW)
SGD = _syncfree(torch.optim.SGD)

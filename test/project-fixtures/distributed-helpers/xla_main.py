import torch.distributed as dist
import torch_xla

import utils


def run(index, args):
    # --- ok ---
    # the process group is created by the helper: get_rank() does not raise here
    utils.init_distributed_mode(args)
    return dist.get_rank()


if __name__ == "__main__":
    torch_xla.launch(run, args=(None,))

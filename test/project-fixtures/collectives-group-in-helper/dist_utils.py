import os

import torch.distributed as dist


def setup():
    dist.init_process_group("gloo", rank=int(os.environ.get("RANK", 0)), world_size=1)

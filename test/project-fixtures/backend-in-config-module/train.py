import torch
import torch.distributed as dist

from hparams import create_hparams


def init_distributed(hparams, n_gpus, rank):
    dist.init_process_group(
        backend=hparams.dist_backend, init_method=hparams.dist_url,  # expect: TPU501
        world_size=n_gpus, rank=rank)


def init_other(hparams):
    # --- ok ---
    dist.init_process_group(backend=hparams.other_backend)
    dist.init_process_group(backend=hparams.unknown_backend)


if __name__ == "__main__":
    hp = create_hparams()
    init_distributed(hp, 1, 0)

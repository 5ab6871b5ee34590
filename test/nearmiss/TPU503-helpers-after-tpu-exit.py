"""A launcher config helper that returns early on TPU: the private helpers it calls after that are the GPU path."""
import os

import torch


def infer_launch(cfg):
    if cfg.init_method is not None or cfg.tpu:
        return
    if all(k in os.environ for k in ("MASTER_ADDR", "WORLD_SIZE", "RANK")):
        _from_launcher(cfg)
    else:
        _from_scheduler(cfg)


def _from_launcher(cfg):
    cfg.world_size = int(os.environ["WORLD_SIZE"])
    cfg.rank = int(os.environ["RANK"])
    cfg.device_id = cfg.rank % torch.cuda.device_count()


def _from_scheduler(cfg):
    cfg.rank = int(os.environ.get("SLURM_PROCID"))
    cfg.world_size = int(os.environ.get("SLURM_NTASKS"))
    torch.cuda.set_device(int(os.environ.get("SLURM_LOCALID")))

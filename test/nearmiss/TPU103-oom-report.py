"""An OOM handler that logs CUDA memory summaries when CUDA is there: nothing is decided for a TPU run."""
import logging
import sys

import torch

logger = logging.getLogger(__name__)


def log_oom(exc):
    logger.warning("OOM: %s", exc)
    if torch.cuda.is_available() and hasattr(torch.cuda, "memory_summary"):
        for idx in range(torch.cuda.device_count()):
            logger.warning(torch.cuda.memory_summary(device=idx))
    sys.stderr.flush()

# The patch module must be imported before transformers.
from pkg.attn_patch import replace_attn  # expect: TPU701

replace_attn()

import torch
from pkg import FusedLoss  # expect: TPU701

# --- ok ---
from pkg.optional import apply_rotary, lazy
from pkg.model import forward
# pkg/trainer.py imports apex only under `if is_apex_available():`
from pkg.trainer import Trainer

try:
    from pkg.rotary import apply_rotary_emb_func
except ImportError:
    apply_rotary_emb_func = None

if torch.cuda.is_available():
    from pkg.attn_patch import replace_attn as patch_cuda

loss = FusedLoss()

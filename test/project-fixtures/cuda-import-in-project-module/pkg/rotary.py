import torch
import rotary_emb  # expect: TPU701


def apply_rotary_emb_func(x, cos, sin):
    return rotary_emb.apply_rotary(x, cos, sin)

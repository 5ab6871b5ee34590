import torch

from .rotary import apply_rotary_emb_func  # expect: TPU701


def forward(x, cos, sin):
    return apply_rotary_emb_func(x, cos, sin)

import torch
from flash_attn.flash_attn_interface import flash_attn_func  # expect: TPU704


def attention(q, k, v):
    return flash_attn_func(q, k, v)  # expect: TPU704


def replace_attn():
    torch.nn.MultiheadAttention.attention = staticmethod(attention)


def self_test():
    # --- ok ---: this module imports flash_attn itself (reported above); a sibling that imports it too adds nothing
    from app.train.flash_patch import replace_attention
    return replace_attention


def other_lib():
    from pkg.rotary import apply_rotary_emb_func  # expect: TPU701
    return apply_rotary_emb_func

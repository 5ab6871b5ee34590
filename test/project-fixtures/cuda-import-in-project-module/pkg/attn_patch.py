import torch
from flash_attn.flash_attn_interface import flash_attn_func  # expect: TPU704


def attention(q, k, v):
    return flash_attn_func(q, k, v)  # expect: TPU704


def replace_attn():
    torch.nn.MultiheadAttention.attention = staticmethod(attention)

import torch
from flash_attn import flash_attn_func  # expect: TPU704


def replace_attention():
    torch.nn.MultiheadAttention.flash = staticmethod(flash_attn_func)

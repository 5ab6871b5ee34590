try:
    import rotary_emb
except ImportError:
    rotary_emb = None


def lazy():
    import flash_attn  # expect: TPU704
    return flash_attn


def apply_rotary(x):
    return x

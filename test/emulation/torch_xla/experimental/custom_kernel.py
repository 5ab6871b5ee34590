"""torch_xla/experimental/custom_kernel.py flash_attention (Pallas). Signatures:
v2.3.0:139 flash_attention(q, k, v, segment_ids=None, causal=False)  (no sm_scale: scale is 1.0)
v2.4.0:425 flash_attention(q, k, v, causal=False, q_segment_ids=None, kv_segment_ids=None, sm_scale=1.0, *, partition_spec=None, mesh=None)
v2.5.0:461 ... sm_scale=1.0, *, ab=None, partition_spec=None, mesh=None)  (same at v2.9.0:854)
Computed here as plain attention on the CPU ([B, H, S, D] layout)."""
import math

import torch

from .. import _emu


def jax_import_guard():
  # custom_kernel.py:68 at v2.3.0 (grabs the TPU before JAX does); re-exported from
  # torch_xla/_internal/jax_workarounds.py at v2.9.0 (custom_kernel.py:15). Nothing to grab here.
  pass


def _attention(q, k, v, causal, sm_scale, ab=None):
  s = torch.matmul(q, k.transpose(-1, -2)) * sm_scale
  if ab is not None:
    s = s + ab
  if causal:
    n, m = s.shape[-2], s.shape[-1]
    mask = torch.ones(n, m, dtype=torch.bool).tril(m - n)
    s = s.masked_fill(~mask, float('-inf'))
  return torch.matmul(torch.softmax(s.float(), dim=-1).to(v.dtype), v)


def _check(q, k, v):
  for t in (q, k, v):
    if t.dim() != 4:
      raise ValueError(f'flash_attention expects [batch_size, num_heads, seq_len, d_model], got {tuple(t.shape)}')


if _emu.at('2.5'):

  def flash_attention(q, k, v, causal=False, q_segment_ids=None, kv_segment_ids=None, sm_scale=1.0, *, ab=None,
                      partition_spec=None, mesh=None):
    _check(q, k, v)
    return _attention(q, k, v, causal, sm_scale, ab)
elif _emu.at('2.4'):

  def flash_attention(q, k, v, causal=False, q_segment_ids=None, kv_segment_ids=None, sm_scale=1.0, *,
                      partition_spec=None, mesh=None):
    _check(q, k, v)
    return _attention(q, k, v, causal, sm_scale)
else:

  def flash_attention(q, k, v, segment_ids=None, causal=False):
    _check(q, k, v)
    return _attention(q, k, v, causal, 1.0)

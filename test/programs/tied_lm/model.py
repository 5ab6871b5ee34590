import torch
import torch.nn as nn


class TinyLM(nn.Module):
    """A one-block causal LM with the output projection tied to the token embedding."""

    def __init__(self, vocab=50, d=16, block=8):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d)
        self.pos_emb = nn.Parameter(torch.zeros(1, block, d))
        self.attn = nn.MultiheadAttention(d, num_heads=2, batch_first=True)
        self.ln = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.tok_emb.weight  # weight tying
        mask = torch.triu(torch.ones(block, block, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, idx):
        t = idx.size(1)
        h = self.tok_emb(idx) + self.pos_emb[:, :t]
        a, _ = self.attn(h, h, h, attn_mask=self.mask[:t, :t], need_weights=False)
        return self.lm_head(self.ln(h + a))

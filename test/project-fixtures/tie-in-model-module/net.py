import torch
import torch.nn as nn


class TinyLM(nn.Module):
    def __init__(self, vocab=128, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, idx):
        return self.head(self.embed(idx))


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Embedding(16, 8)
        self.out = nn.Linear(8, 16, bias=False)
        self.tie_weights()

    def tie_weights(self):
        self.out.weight = self.inp.weight


class Untied(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Embedding(16, 8)
        self.out = nn.Linear(8, 16, bias=False)

import torch.nn as nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(64, 16)
        self.proj = nn.Linear(16, 64, bias=False)
        self.proj.weight = self.tok.weight

import torch
import xentropy_cuda_lib  # expect: TPU701


class FusedLoss(torch.nn.Module):
    def forward(self, logits, labels):
        return xentropy_cuda_lib.forward(logits, labels, 0.0)

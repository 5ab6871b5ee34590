import torch
import torch.nn.functional as F

from helpers import *


def train(model, loader, optimizer, device):
    print(describe(torch.tensor([3, 4])))
    for x, lengths in loader:
        x, lengths = x.to(device), lengths.to(device)
        mask = length_to_mask(lengths)
        loss = F.mse_loss(model(x) * mask, x * mask)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()

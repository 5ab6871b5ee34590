import torch
import torch.nn.functional as F

from audio import normalise, spectrogram


def train(model, loader, optimizer, device):
    for wav, target in loader:
        wav, target = wav.to(device), target.to(device)
        pred = model(wav)
        loss = F.l1_loss(spectrogram(pred, 64), spectrogram(target, 64)) + normalise(pred).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()

import torch
import torch.nn.functional as F


def spectrogram(y, n_fft):
    # the caller's device tensor is what these tests read: `y` is rebound only below them
    if torch.min(y) < -1.0:  # expect: TPU202
        print("clipping below -1")
    if torch.max(y) > 1.0:  # expect: TPU202
        print("clipping above 1")
    y = F.pad(y.unsqueeze(1), (n_fft // 2, n_fft // 2), mode="reflect")
    y = y.squeeze(1)
    return torch.stft(y, n_fft, return_complex=True).abs()


def normalise(x, peak=None):
    # --- ok ---: the parameter is rebound before the test to a host number
    peak = 1.0
    if peak > 0.5:
        x = x / peak
    return x

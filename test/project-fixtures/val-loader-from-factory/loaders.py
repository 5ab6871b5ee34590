import torch
from torch.utils.data import DataLoader, TensorDataset


def make_dataset(n):
    return TensorDataset(torch.randn(n, 4), torch.randint(0, 2, (n,)))


def build_loader(ds, batch_size):
    """Shared by the validation and test loaders of the caller: it keeps every sample."""
    return DataLoader(ds, batch_size=batch_size, num_workers=2)


def build_train_loader(ds, batch_size):
    return DataLoader(ds, batch_size=batch_size, shuffle=True, drop_last=True)


def build_padded_loader(ds, batch_size):
    return DataLoader(ds, batch_size=batch_size, drop_last=True)

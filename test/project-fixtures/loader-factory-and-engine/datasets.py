import torch
from torch.utils.data import DataLoader, TensorDataset


def build_loader(n, batch_size):
    ds = TensorDataset(torch.randn(n, 4), torch.randint(0, 2, (n,)))
    return DataLoader(ds, batch_size=batch_size, shuffle=True, drop_last=True)


def build_wrapped(n):
    loader = DataLoader(TensorDataset(torch.randn(n, 4)), batch_size=2, drop_last=True)
    return loader


def build_tensor(n):
    return torch.randn(n, 4)


def build_dataloaders(n):
    ds = TensorDataset(torch.randn(n, 4), torch.randint(0, 2, (n,)))
    train = DataLoader(ds, batch_size=4, drop_last=True)
    return ds, train, None

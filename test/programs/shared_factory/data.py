"""Datasets and loaders shared by training and evaluation."""
import torch
from torch.utils.data import DataLoader, TensorDataset


def synthetic(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=g)
    y = (x[:, :3].sum(dim=1) > 0).long()
    return TensorDataset(x, y)


def get_loaders(batch_size, num_workers=0):
    train_set = synthetic(100, seed=0)
    test_set = synthetic(60, seed=1)
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                              pin_memory=torch.cuda.is_available(), generator=torch.Generator().manual_seed(7))
    test_loader = DataLoader(test_set, batch_size=batch_size, shuffle=False, num_workers=num_workers)
    return train_loader, test_loader

from torch.utils.data import DataLoader, TensorDataset
import torch


def data_provider(args, flag):
    data_set = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    shuffle = flag == "train"
    data_loader = DataLoader(data_set, batch_size=args.batch_size, shuffle=shuffle, drop_last=True)
    return data_set, data_loader

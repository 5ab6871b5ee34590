import torch
from torch.utils.data import DataLoader

from models import PairModel


def train(opt, ds):
    loader = DataLoader(ds, batch_size=4, drop_last=True)
    model = PairModel(opt)
    for epoch in range(3):
        for i, data in enumerate(loader):
            model.set_input(data)
            model.optimize()


def warmup(opt, batches):
    # the model's own buffers, not a loader's batch: a loop over range
    model = PairModel(opt)
    for k in range(3):
        model.set_input(batches[k])
        model.optimize()

import math

import torch
from torch.utils.data import DataLoader

from model import Tacotron2


def load_model(hparams):
    model = Tacotron2(hparams).cuda()
    return model


def train(hparams, trainset, idset):
    model = load_model(hparams)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    train_loader = DataLoader(trainset, batch_size=8, drop_last=True)
    for epoch in range(10):
        for i, batch in enumerate(train_loader):  # expect: TPU204
            model.zero_grad()
            x, y = model.parse_batch(batch)
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            is_overflow = math.isnan(grad_norm)  # expect: TPU201
            if not is_overflow and i % 100 == 0:
                print("step", i)
    id_loader = DataLoader(idset, batch_size=8, drop_last=True)
    for batch in id_loader:  # expect: TPU204
        ids, lengths = model.parse_ids(batch)
        model.zero_grad()
        model((ids, lengths)).sum().backward()
        optimizer.step()

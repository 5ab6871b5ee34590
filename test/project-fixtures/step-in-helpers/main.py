import torch
import engine
from scaler import NativeScaler


def main(model, data, device):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_scaler = NativeScaler()
    for epoch in range(3):
        engine.train_one_epoch(model, data, optimizer, loss_scaler, device)
        engine.evaluate(model, data, device)

import torch

from models import Vocoder
from ckpt import checkpoint, restore
from tools import EarlyStopping, save_optimizer


def main(batches, path):
    device = torch.device("cuda")
    model = Vocoder().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stopper = EarlyStopping()
    restore(model, opt, path)
    for epoch in range(3):
        for x in batches:
            loss = model(x.to(device)).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
        model.save(path + "/last.pt")
        model.export_cpu(path + "/last_cpu.pt")
        stopper(float(loss), model, path)
        save_optimizer(opt, path + "/opt.pt")
        checkpoint(model, opt, path)

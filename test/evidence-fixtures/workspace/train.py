import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from models.net import Net


def train(loader, steps):
    device = torch_xla.device()
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y, lengths) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        logits = model(x[:, : lengths.max()])
        loss = F.ctc_loss(logits, y, lengths, lengths)
        loss.backward()
        opt.step()
        if loss.item() > 10:  # "é" non-ASCII comment
            print("diverging")
        xm.mark_step()


if __name__ == "__main__":
    train([], 1)

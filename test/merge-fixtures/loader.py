import torch
from torch.utils.data import DataLoader


def train(model, ds, opt):
    device = torch.device("cuda")
    model.to(device)
    loader = DataLoader(ds, batch_size=8, drop_last=True)
    for x, y in loader:  # has: TPU204 # not: TPU401
        x, y = x.to(device), y.to(device)  # has: TPU401
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()


# --- ok ---
def train_unknown_device(model, ds, opt, device):
    loader = DataLoader(ds, batch_size=8, drop_last=True)
    # the loop's device is a parameter: both rules still wrap the loader, one finding
    for x, y in loader:  # has: TPU204 # not: TPU401
        x, y = x.to(device), y.to(device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()

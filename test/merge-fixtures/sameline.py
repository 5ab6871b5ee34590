import torch


def train(model, loader, opt, device):
    for step, (x, y) in enumerate(loader):
        parts = model(x.to(device), y.to(device))
        loss = parts.sum()
        loss.backward()
        opt.step()
        print(parts[0].item(), parts[1].item(), loss.item())  # once: TPU201
        keep = x[y > 0], y[y > 0]  # once: TPU203


# --- ok ---
def train2(model, loader, opt, device):
    for x, y in loader:
        loss = model(x.to(device), y.to(device)).sum()
        loss.backward()
        opt.step()
        a = loss.item()  # once: TPU201
        b = loss.item()  # once: TPU201

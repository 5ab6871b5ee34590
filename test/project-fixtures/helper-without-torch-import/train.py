import torch
import torch.nn.functional as F

import meters


def fit(model, loader, optimizer, device):
    history = meters.History()
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        loss = F.cross_entropy(model(images), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.add(loss)  # expect: TPU201
        print(meters.grad_norm(model))
        meters.log_step(len(history.values))

import torch
from data import make_loader

device = torch.device("cuda")
model = Detector().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
train_loader, dataset = make_loader("train.txt", 16)
for epoch in range(10):
    pbar = enumerate(train_loader)
    for i, (imgs, targets, paths) in pbar:
        imgs = imgs.to(device).float() / 255
        loss = compute_loss(model(imgs), targets.to(device))  # expect: TPU404
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

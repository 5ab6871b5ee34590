"""Mixed-precision image classifier on non-square FakeData; every step appends its loss to a log file opened
in the loop, and the run ends with a checkpoint (model, optimizer, scaler) that a second phase resumes from."""
import os

import torch
import torch.nn as nn
import torchvision
import torchvision.transforms as transforms

from metrics import checkpoint_summary, write_metrics

device = "cuda" if torch.cuda.is_available() else "cpu"
use_amp = True
log_path = "train_log.txt"
ckpt_path = "last.pt"

torch.manual_seed(7)
# 12x20 images: Resize(12) keeps them 12x20 (the shorter side is already 12); a square resize would not
transform = transforms.Compose([transforms.Resize(12), transforms.ToTensor(), transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))])
trainset = torchvision.datasets.FakeData(size=48, image_size=(3, 12, 20), num_classes=3, transform=transform, random_offset=0)
loader = torch.utils.data.DataLoader(trainset, batch_size=8, shuffle=False, num_workers=0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        # a flatten over the whole map: its width depends on the image's aspect ratio
        self.head = nn.Linear(8 * 6 * 10, 3)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        x = nn.functional.max_pool2d(x, 2)
        return self.head(x.flatten(1))


model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
criterion = nn.CrossEntropyLoss()


def run_epochs(epochs, losses):
    for epoch in range(epochs):
        for step, (images, targets) in enumerate(loader):
            images, targets = images.to(device), targets.to(device)
            optimizer.zero_grad()
            with torch.cuda.amp.autocast(enabled=use_amp):
                loss = criterion(model(images), targets)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            losses.append(loss.item())
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
            with open(log_path, "a") as f:
                f.write(f"{epoch} {step} {loss.item():.6f}\n")


if os.path.exists(log_path):
    os.remove(log_path)
losses = []
run_epochs(1, losses)
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict()}, ckpt_path)

# resume: a fresh model and optimizer from the checkpoint
model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
state = torch.load(ckpt_path, map_location=device)
model.load_state_dict(state["model"])
optimizer.load_state_dict(state["optimizer"])
scaler.load_state_dict(state["scaler"])
run_epochs(1, losses)

with open(log_path) as f:
    logged = f.read().split("\n")[:-1]
write_metrics(losses=losses, logged=logged, checkpoint=checkpoint_summary(ckpt_path))

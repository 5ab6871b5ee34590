"""Mixed-precision training on the GPU when there is one."""
import torch
import torch.nn as nn
import torch.optim as optim

from metrics import checkpoint_summary, write_metrics

train_on_gpu = torch.cuda.is_available()
if not train_on_gpu:
    print("CUDA is not available.  Training on CPU ...")
else:
    print("CUDA is available!  Training on GPU ...")

use_amp = train_on_gpu


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 4 * 4, 5)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv(x)))
        return self.fc(x.flatten(1))


torch.manual_seed(5)
model = ConvNet()
if train_on_gpu:
    model.cuda()

criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scaler = torch.cuda.amp.GradScaler(enabled=use_amp)

images = torch.randn(40, 1, 8, 8)
labels = torch.randint(0, 5, (40,))

losses = []
for step in range(10):
    i = (step * 8) % 40
    data, target = images[i:i + 8], labels[i:i + 8]
    if train_on_gpu:
        data, target = data.cuda(), target.cuda()
    optimizer.zero_grad()
    with torch.cuda.amp.autocast(enabled=use_amp, dtype=torch.float16):
        output = model(data)
        loss = criterion(output, target)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    losses.append(loss.item())

torch.save({"model": model.state_dict(), "scaler": scaler.state_dict()}, "amp_ckpt.pt")
write_metrics(losses=losses, scale=scaler.get_scale() if use_amp else None,
              checkpoint=checkpoint_summary("amp_ckpt.pt"))

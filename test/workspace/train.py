import torch
import torch.nn as nn
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(16, 4).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.cuda.amp.GradScaler()
loader = DataLoader(list(range(64)), batch_size=8, pin_memory=True)

for step, batch in enumerate(loader):
    x = torch.randn(8, 16).to(device, non_blocking=True)
    with torch.cuda.amp.autocast():
        loss = model(x).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.3f}")
torch.save(model.state_dict(), "model.pt")

import torch
import torch.nn as nn

# no training loop: a CPU inference script is not reported
model = nn.Linear(8, 2)
model.load_state_dict(torch.load("model.pt", map_location="cpu"))
model.eval()
with torch.no_grad():
    for i in range(10):
        x = torch.randn(1, 8)
        print(model(x).argmax(1).item())

"""Linear probe training. Données synthétiques (CRLF line endings, as saved on Windows)."""
import torch
import torch.nn as nn

from helpers import describe, save_metrics

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(15)
probe = nn.Linear(7, 2)
probe.cuda() if torch.cuda.is_available() else None
optimizer = torch.optim.SGD(probe.parameters(), lr=0.2)
x = torch.randn(30, 7)
y = torch.randint(0, 2, (30,))
losses = []
for step in range(6):
    xb, yb = x[step * 5:(step + 1) * 5].to(device), y[step * 5:(step + 1) * 5].to(device)
    loss = nn.functional.cross_entropy(probe(xb), yb)  # perte — cross-entropy
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
torch.save(probe.state_dict(), "probe.pt")
save_metrics(losses=losses, checkpoint=describe("probe.pt"), note="été")

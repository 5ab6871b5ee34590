# The helper is imported as a module under an alias (`import data_util as du`) and used only as `du.load_arrays(...)`:
# the program still places nothing on an accelerator, reported once at the epoch loop's header; the loader and
# the per-step loss reads are host work and are not reported.
import torch
from torch.utils.data import DataLoader, TensorDataset

import data_util as du

features, labels = du.load_arrays(256, 8)
loader = DataLoader(TensorDataset(torch.from_numpy(features), torch.from_numpy(labels)), batch_size=32, shuffle=True)
net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
criterion = torch.nn.CrossEntropyLoss()

for epoch in range(3):  # expect: TPU114
    running = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(net(xb), yb)
        loss.backward()
        optimizer.step()
        running += loss.item()
    print(f"epoch {epoch}: {running / len(loader):.3f}")

"""A tiny GAN: noise and labels made on the host every step, then moved to the device."""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from metrics import write_metrics

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(3)
np.random.seed(3)

latent = 8
real_data = torch.randn(64, 16) * 0.5 + 1.0
loader = DataLoader(TensorDataset(real_data), batch_size=16, shuffle=False, drop_last=True)

G = nn.Sequential(nn.Linear(latent, 32), nn.ReLU(), nn.Linear(32, 16)).to(device)
D = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1)).to(device)
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()

losses = []
for epoch in range(2):
    for (real,) in loader:
        real = real.to(device)
        b = real.size(0)
        valid = torch.ones(b, 1).to(device)
        fake_label = torch.zeros(b, 1).to(device)
        z = torch.randn(b, latent).to(device)
        z_np = torch.from_numpy(np.random.normal(0, 1, (b, latent))).float().to(device)

        opt_g.zero_grad()
        g_loss = bce(D(G(z)), valid) + 0.1 * bce(D(G(z_np)), valid)
        g_loss.backward()
        opt_g.step()

        opt_d.zero_grad()
        d_loss = bce(D(real), valid) + bce(D(G(z).detach()), fake_label)
        d_loss.backward()
        opt_d.step()
        losses.extend([float(g_loss.item()), float(d_loss.item())])

write_metrics(losses=losses)

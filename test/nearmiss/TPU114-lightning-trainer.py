import torch
import torch.nn as nn
import torch.nn.functional as F
import pytorch_lightning as pl

# the Trainer places the model (accelerator="auto")


class Lit(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.fc(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


model = Lit()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x = torch.randn(16, 8)
    loss = F.cross_entropy(model.fc(x), torch.randint(0, 2, (16,)))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
pl.Trainer(max_epochs=1).fit(model)

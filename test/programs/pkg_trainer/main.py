import torch
import torch.nn as nn

from metrics import checkpoint_summary, write_metrics
from pkg import Trainer


def main():
    torch.manual_seed(12)
    model = nn.Sequential(nn.Linear(3, 8), nn.SiLU(), nn.Linear(8, 1))
    trainer = Trainer(model)
    w = torch.tensor([[1.5], [-2.0], [0.5]])
    losses = []
    for step in range(12):
        x = torch.randn(10, 3)
        losses.append(trainer.step(x, x @ w))
    xv = torch.randn(20, 3)
    val = trainer.evaluate(xv, xv @ w)
    trainer.save("trainer.pt")
    write_metrics(losses=losses, val_loss=val, checkpoint=checkpoint_summary("trainer.pt"))


if __name__ == "__main__":
    main()

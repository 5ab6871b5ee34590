"""Train, checkpoint, then resume from the checkpoint and keep training."""
import os

import torch
import torch.nn as nn

from metrics import checkpoint_summary, write_metrics

CKPT_DIR = "checkpoints"
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(5, 10), nn.BatchNorm1d(10), nn.ReLU())
        self.head = nn.Linear(10, 3)

    def forward(self, x):
        return self.head(self.body(x))


def batches(step):
    g = torch.Generator().manual_seed(100 + step)
    x = torch.randn(16, 5, generator=g)
    return x, (x[:, 0] * 3).long().clamp(0, 2)


def run(model, optimizer, scheduler, start, stop, losses):
    model.train()
    for step in range(start, stop):
        x, y = batches(step)
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())


def main():
    torch.manual_seed(11)
    os.makedirs(CKPT_DIR, exist_ok=True)
    model = Classifier().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    losses = []
    run(model, optimizer, scheduler, 0, 5, losses)
    path = os.path.join(CKPT_DIR, "step5.pt")
    torch.save({
        "step": 5,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
    }, path)
    torch.save(model, os.path.join(CKPT_DIR, "model_full.pt"))

    # resume in a fresh model, as after a restart
    resumed = Classifier().to(device)
    opt2 = torch.optim.SGD(resumed.parameters(), lr=0.1, momentum=0.9)
    sched2 = torch.optim.lr_scheduler.StepLR(opt2, step_size=3, gamma=0.5)
    state = torch.load(path, map_location=device)
    resumed.load_state_dict(state["model"])
    opt2.load_state_dict(state["optimizer"])
    sched2.load_state_dict(state["scheduler"])
    run(resumed, opt2, sched2, state["step"], 10, losses)

    # the whole pickled model, loaded on the CPU and moved back
    full = torch.load(os.path.join(CKPT_DIR, "model_full.pt"), map_location="cpu")
    full = full.to(device)
    full.eval()
    with torch.no_grad():
        x, _ = batches(0)
        probe = full(x.to(device)).sum().item()

    write_metrics(losses=losses, probe=probe, checkpoint=checkpoint_summary(path),
                  full_model=checkpoint_summary(os.path.join(CKPT_DIR, "model_full.pt")))


if __name__ == "__main__":
    main()

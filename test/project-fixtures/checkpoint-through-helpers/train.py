import torch
from torch.utils.data import DataLoader

from pkg.checkpoint import build_checkpoint, save_full, save_model
from somelib.ckpt import save_checkpoint


def main(model, ds, optimizer, device, epochs):
    model.to(device)
    for epoch in range(epochs):
        for x, y in DataLoader(ds, batch_size=8, drop_last=True):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        save_model(model, f"epoch_{epoch}.pt")
        save_full(model, optimizer, "full.pt")
        ckpt = build_checkpoint(model, optimizer, epoch)
        torch.save(ckpt, "last.pt")  # expect: TPU601
        # a library helper named for checkpoints, given the model: it returns the dict it builds
        state = save_checkpoint(model, optimizer, epoch=epoch)
        torch.save(state, "lib.pt")  # expect: TPU601
        meta = {"epoch": epoch, "loss": float(loss)}
        torch.save(meta, "meta.pt")

"""The trainer places the model on the device named by an attribute chain of its options (`self.args.device`)."""
import torch

from ckpt_utils import save_cpu, save_checkpoint


class Trainer:
    def __init__(self, **kwargs):
        self.args = kwargs["args"]
        self.model = kwargs["model"].to(self.args.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train(self, loader):
        for images, labels in loader:
            images = images.to(self.args.device)
            loss = torch.nn.functional.cross_entropy(self.model(images), labels.to(self.args.device))
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        save_checkpoint({  # expect: TPU601
            "epoch": self.args.epochs,
            "state_dict": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
        }, is_best=False, filename="last.pth.tar")
        # --- ok ---
        save_cpu({k: v.cpu() for k, v in self.model.state_dict().items()}, "cpu.pth.tar")

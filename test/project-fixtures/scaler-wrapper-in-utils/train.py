import torch
import torch.nn as nn

from utils import Averager, ScalerWithGradNorm


def main():
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_scaler = ScalerWithGradNorm()
    meter = Averager()
    for step in range(3):
        loss = model(torch.randn(2, 4)).pow(2).mean()
        loss_scaler(loss, opt, model.parameters())
        opt.zero_grad()
        # the wrapped CUDA scaler is disabled on a TPU host: its state is {}
        scale = loss_scaler.state_dict()["scale"]  # expect: TPU303
        # --- ok ---
        # another helper's state dict has the key
        avg = meter.state_dict()["scale"]
        print(step, scale, avg)


if __name__ == "__main__":
    main()

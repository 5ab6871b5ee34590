import torch
import torch_xla

import net
from net import TinyLM, Untied
from pkg import Decoder as Dec

device = torch_xla.device()


def main():
    model = TinyLM()
    model.to(device)  # expect: TPU108
    tied = net.Tied()
    tied = tied.to(device)  # expect: TPU108
    dec = Dec().to(device)  # expect: TPU108
    # --- ok ---
    plain = Untied()
    plain.to(device)
    again = TinyLM()
    again.to(device)
    again.head.weight = again.embed.weight
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return opt, tied, dec, plain


if __name__ == '__main__':
    main()

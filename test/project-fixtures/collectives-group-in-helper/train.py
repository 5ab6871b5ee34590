"""The process group is created by a helper module of the project: the collectives here are fine."""
import torch
import torch.distributed as dist

import dist_utils


def evaluate(model, loader):
    correct = torch.zeros(1)
    for x, y in loader:
        correct += (model(x).argmax(-1) == y).float().sum()
    dist.all_reduce(correct)
    if dist.get_rank() == 0:
        # only rank 0 enters it: the others never do
        dist.barrier()  # expect: TPU507
    return correct


if __name__ == "__main__":
    dist_utils.setup()
    net = torch.nn.Linear(4, 2)
    print(evaluate(net, [(torch.randn(8, 4), torch.randint(0, 2, (8,)))]))

import os

import torch

from helpers import BestKeeper, dump_last


def fit(net, batches, folder):
    net = net.cuda()
    keeper = BestKeeper()
    if os.path.exists(folder + "/resume.pt"):
        # a file no module of the project writes: may come from a GPU run
        net.load_state_dict(torch.load(folder + "/resume.pt"))  # expect: TPU602
    for epoch in range(3):
        score = sum(float(net(x.cuda()).sum()) for x in batches)
        keeper(score, net, folder)
    dump_last(net, folder)
    # written earlier in this run by the helpers of helpers.py: no foreign GPU checkpoint
    net.load_state_dict(torch.load(os.path.join(folder, "best_weights.pt")))
    net.load_state_dict(torch.load(folder + "/last_weights.pt"))
    return net


def evaluate(net, folder):
    net = net.cuda()
    # read in another function: the file may come from a GPU run
    net.load_state_dict(torch.load(folder + "/best_weights.pt"))  # expect: TPU602
    return net

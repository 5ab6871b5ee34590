import torch


def length_to_mask(lengths):
    mask = torch.arange(lengths.max()).unsqueeze(0).expand(lengths.shape[0], -1).type_as(lengths)  # expect: TPU203
    return torch.gt(mask + 1, lengths.unsqueeze(1))


def describe(lengths):
    # --- ok ---: called once, before training
    return torch.arange(lengths.max())

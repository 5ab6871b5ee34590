import torch


def accuracy(logits, y):
    return (logits.argmax(-1) == y).float().sum()

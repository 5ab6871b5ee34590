import torch

from pkg.batches import as_callback, batches, eval_batches, stream_batches


def main(dev):
    for b in stream_batches(3, 8, device=dev):
        print(b.sum())
    for b in batches(2, 8, device=dev):
        print(b.sum())
    print(eval_batches(2))
    hooks = [as_callback]
    print(as_callback(2, device=dev), hooks)


if __name__ == "__main__":
    main(torch.device("cpu"))

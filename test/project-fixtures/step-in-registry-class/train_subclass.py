from algorithms import Mixup


def main(hparams, batches):
    algorithm = Mixup(10, hparams)
    for step in range(1000):  # expect: TPU204
        algorithm.update(next(batches))

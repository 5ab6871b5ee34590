import algorithms


def main(hparams, batches, steps):
    algorithm = algorithms.build(hparams["name"])(10, hparams)
    for step in range(steps):  # expect: TPU204
        algorithm.update(next(batches))

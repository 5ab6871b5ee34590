import torch

import algorithms


def main(args, hparams, train_loaders, device):
    algorithm_class = algorithms.get_algorithm_class(args.algorithm)
    algorithm = algorithm_class(10, hparams)
    algorithm.to(device)
    train_minibatches_iterator = zip(*train_loaders)
    for step in range(5000):  # expect: TPU204
        minibatches = [(x.to(device), y.to(device)) for x, y in next(train_minibatches_iterator)]
        step_vals = algorithm.update(minibatches)
        if step % 100 == 0:
            print(step, step_vals)

# --- ok: the registry's instances used for prediction only (no training step in the loop) ---


def evaluate(args, hparams, batches):
    algorithm = algorithms.get_algorithm_class(args.algorithm)(10, hparams)
    preds = []
    for x in batches:
        preds.append(algorithm.predict(x))
    return preds

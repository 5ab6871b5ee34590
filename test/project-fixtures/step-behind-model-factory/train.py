import torch

from models.select_model import define_model


def main(opt, loader):
    model = define_model(opt)
    step = 0
    for epoch in range(100):
        for data in loader:  # expect: TPU204
            step += 1
            model.feed_data(data)
            model.optimize_parameters(step)
            if step % 100 == 0:
                print(step, model.current_log())

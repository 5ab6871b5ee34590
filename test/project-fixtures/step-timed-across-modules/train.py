import time

from torch.utils.data import DataLoader

from models import GanModel


def train(opt, ds):
    model = GanModel(opt)
    for i, data in enumerate(DataLoader(ds, batch_size=4, drop_last=True)):
        t0 = time.time()
        model.step(data)
        print("step time", time.time() - t0)  # expect: TPU803
        t1 = time.time()
        model.describe()
        print("describe time", time.time() - t1)

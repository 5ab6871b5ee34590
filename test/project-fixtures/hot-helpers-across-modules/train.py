import torch
import torch.nn.functional as F
import utils
from utils import mean_of


def train_one_epoch(model, loader, optimizer, device):
    logger = utils.MetricLogger()
    times = []
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        utils.clip_gradients(model, 1.0)
        optimizer.step()
        acc = (model(x).argmax(-1) == y).float().mean()
        utils.check_range(model(x))
        logger.update(lr=optimizer.param_groups[0]["lr"])
        logger.update(acc=acc)  # expect: TPU201
        times.append(0.1)
        print(mean_of(times))


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y)
        utils.report_eval(loss)  # expect: TPU201

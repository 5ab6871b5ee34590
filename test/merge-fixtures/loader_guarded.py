import torch
from torch.utils.data import DataLoader


# --- ok ---
def train_guarded(model, ds, opt, train_on_gpu):
    loader = DataLoader(ds, batch_size=8, drop_last=True)
    if train_on_gpu:
        model.cuda()
    # different advice: no loader wrap while a CUDA check places the model; the barrier is on the loop, the copy on its line
    for x, y in loader:  # has: TPU204 # not: TPU401
        if train_on_gpu:
            x, y = x.cuda(), y.cuda()  # has: TPU401
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()

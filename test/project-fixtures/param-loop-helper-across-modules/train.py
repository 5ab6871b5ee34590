import torch
import torch_xla
import utils

device = torch_xla.device()
model = torch.nn.Linear(4, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = []
for step, x in enumerate(loader):
    x = x.to(device)
    loss = model(x).sum()
    loss.backward()
    utils.clip_gradients(model, 3.0)
    if step % 100 == 0:
        print(utils.grad_stats(model))
    opt.step()
    opt.zero_grad()
    torch_xla.sync()

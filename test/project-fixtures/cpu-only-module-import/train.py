# The helper is imported as a module (`import data_util`) and used only as `data_util.load_arrays(...)`: the program
# still places nothing on an accelerator, reported once at the epoch loop's header.
import torch
import torch.nn.functional as F

import data_util

X, Y = data_util.load_arrays(256, 8)
x_all, y_all = torch.from_numpy(X), torch.from_numpy(Y)
model = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(5):  # expect: TPU114
    for i in range(0, 256, 32):
        loss = F.cross_entropy(model(x_all[i:i + 32]), y_all[i:i + 32])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(epoch, loss.item())

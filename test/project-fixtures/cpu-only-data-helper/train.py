# The script and the helper it imports place nothing on an accelerator: the program trains on the host CPU of a
# TPU VM, reported once; the host reads and the missing step barrier are not reported on work that never reaches a device.
import torch
import torch.nn.functional as F

from data_util import load_arrays

X, Y = load_arrays(256, 8)
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

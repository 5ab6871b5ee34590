import torch

model = torch.nn.Linear(4, 4).cuda()
x = torch.randn(2, 4).cuda()
y = model(x).cuda()

import torch; torch.ones(1).cuda()

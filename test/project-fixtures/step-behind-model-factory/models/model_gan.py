import torch
import torch.nn.functional as F

from models.model_plain import ModelPlain


class ModelGAN(ModelPlain):
    def optimize_parameters(self, step):
        self.opt.zero_grad()
        loss = F.mse_loss(self.net(self.lq), self.gt)
        loss.backward()
        self.opt.step()

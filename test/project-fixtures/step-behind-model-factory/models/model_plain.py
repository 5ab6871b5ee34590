import torch
import torch.nn.functional as F


class ModelPlain:
    def __init__(self, opt):
        self.device = torch.device("cuda" if opt["gpu"] else "cpu")
        self.net = torch.nn.Conv2d(3, 3, 3, padding=1).to(self.device)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=opt["lr"])
        self.log = {}

    def feed_data(self, data):
        self.lq = data["lq"].to(self.device)
        self.gt = data["gt"].to(self.device)

    def optimize_parameters(self, step):
        self.opt.zero_grad()
        self.out = self.net(self.lq)
        loss = F.l1_loss(self.out, self.gt)
        loss.backward()
        self.opt.step()
        self.log["loss"] = loss.item()  # expect: TPU201

    def current_log(self):
        return self.log

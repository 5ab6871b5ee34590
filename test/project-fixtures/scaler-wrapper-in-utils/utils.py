import torch


class ScalerWithGradNorm:
    state_dict_key = "amp_scaler"

    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()  # expect: TPU303

    def __call__(self, loss, optimizer, parameters):
        self._scaler.scale(loss).backward()
        self._scaler.unscale_(optimizer)
        norm = torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        self._scaler.step(optimizer)
        self._scaler.update()
        return norm

    def state_dict(self):
        return self._scaler.state_dict()


class Averager:
    def state_dict(self):
        return {"scale": 1.0, "count": 0}

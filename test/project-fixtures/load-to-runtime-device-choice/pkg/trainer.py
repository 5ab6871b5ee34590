import torch
from . import devices


class Trainer:
    def __init__(self, model, resume):
        self.model = model.to(devices.current_device())
        if resume:
            # on a host without CUDA the helper gives the CPU: not a CUDA load, but the training device once it is XLA
            self.model.load_state_dict(devices.read_weights(resume, map_location=devices.current_device()))  # expect: TPU602
            ema = torch.load(resume + ".ema", map_location=devices.current_device())  # expect: TPU602
            self.model.load_state_dict(ema)

    def load_gpu(self, path):
        # a device that is CUDA on every host: a TPU host has none
        self.model.load_state_dict(devices.read_weights(path, map_location=devices.gpu_only()))  # expect: TPU602

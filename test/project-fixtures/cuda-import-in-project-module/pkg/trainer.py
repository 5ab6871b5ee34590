"""An HF-Trainer-style module: Apex is imported only when it is installed, and used only on its fp16 path."""
import torch
from transformers.file_utils import is_apex_available

if is_apex_available():
    from apex import amp


class Trainer:
    def __init__(self, model, optimizer, use_apex):
        self.model, self.optimizer, self.use_apex = model, optimizer, use_apex

    def clip(self):
        params = amp.master_params(self.optimizer) if self.use_apex else self.model.parameters()
        torch.nn.utils.clip_grad_norm_(params, 1.0)

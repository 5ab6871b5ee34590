import torch

dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16  # has: TPU302 # not: TPU103
amp = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"  # has: TPU302 # not: TPU103

# --- ok ---
use_cuda = torch.cuda.is_available()  # has: TPU103

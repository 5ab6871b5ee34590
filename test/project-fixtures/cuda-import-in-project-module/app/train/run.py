# app/ has no __init__.py: the import names the file's own package folders (the repo root is on sys.path)
import torch
from app.train.flash_patch import replace_attention  # expect: TPU701

replace_attention()

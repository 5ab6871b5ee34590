# The data pipeline stays on the host: datasets cast dtypes and copy to the CPU, a collate function stacks host
# tensors, and a class that is no Dataset (a device-resident replay buffer) indexes device memory in `__getitem__`.
import torch
from torch.utils.data import DataLoader, Dataset


class Frames(Dataset):
    def __init__(self, clips):
        self.clips = clips

    def __len__(self):
        return len(self.clips)

    def __getitem__(self, i):
        clip = torch.as_tensor(self.clips[i]).to(torch.float32)
        return clip.to(torch.device("cpu")), clip.mean().to("cpu", torch.bfloat16)


def stack_batch(batch):
    return torch.stack([b[0] for b in batch]), torch.stack([b[1] for b in batch])


class DeviceBuffer:
    """Not a dataset: rows already live on the device, indexing them is no copy from the host pipeline."""

    def __init__(self, rows, device):
        self.rows = rows.to(device)

    def __getitem__(self, i):
        return self.rows[i]


def make_loader(clips):
    return DataLoader(Frames(clips), batch_size=8, num_workers=4, collate_fn=stack_batch, drop_last=True)

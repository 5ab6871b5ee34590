import torch
from torch.utils.data import DataLoader, Dataset


class Boxes(Dataset):
    def __getitem__(self, i):
        img, labels = self.load(i)  # labels: n_i x 6 (image index, class, box)
        return img, labels, self.paths[i]

    @staticmethod
    def collate_fn(batch):
        im, label, path = zip(*batch)
        for i, lb in enumerate(label):
            lb[:, 0] = i
        return torch.stack(im, 0), torch.cat(label, 0), path

    @staticmethod
    def collate_padded(batch):
        im, label, path = zip(*batch)
        return torch.stack(im, 0), torch.stack(label, 0), path


def make_loader(path, batch_size, padded=False):
    dataset = Boxes(path)
    loader = DataLoader(dataset, batch_size=batch_size, drop_last=True,
                        collate_fn=Boxes.collate_padded if padded else Boxes.collate_fn)
    return loader, dataset

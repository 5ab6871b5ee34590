from collections import namedtuple

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from metrics import checkpoint_summary, write_metrics
from model import TinyLM

Batch = namedtuple("Batch", ["inputs", "targets"])


class Tokens(Dataset):
    def __init__(self, n=52, block=8, vocab=50):
        g = torch.Generator().manual_seed(9)
        self.data = torch.randint(0, vocab, (n, block + 1), generator=g)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.data[i]


def collate(rows):
    rows = torch.stack(rows)
    return Batch(rows[:, :-1], rows[:, 1:])


def main():
    torch.manual_seed(10)
    model = TinyLM()
    if torch.cuda.is_available():
        model = model.cuda()
    device = next(model.parameters()).device
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    loader = DataLoader(Tokens(), batch_size=8, shuffle=False, collate_fn=collate)
    losses = []
    for epoch in range(2):
        for batch in loader:
            inputs, targets = batch.inputs.to(device), batch.targets.to(device)
            logits = model(inputs)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    torch.save(model.state_dict(), "lm.pt")
    write_metrics(losses=losses, tied=model.lm_head.weight is model.tok_emb.weight,
                  n_params=sum(p.numel() for p in model.parameters()), checkpoint=checkpoint_summary("lm.pt"))


if __name__ == "__main__":
    main()

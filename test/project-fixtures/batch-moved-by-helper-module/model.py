import torch

from utils import to_gpu, to_long


class Tacotron2(torch.nn.Module):
    def __init__(self, hparams):
        super().__init__()
        self.embedding = torch.nn.Embedding(hparams["n_symbols"], 8)
        self.proj = torch.nn.Linear(8, 8)

    def parse_batch(self, batch):
        text_padded, input_lengths, mel_padded = batch
        text_padded = to_gpu(text_padded).long()  # expect: TPU401
        input_lengths = to_gpu(input_lengths).long()
        mel_padded = to_gpu(mel_padded).float()
        return (text_padded, input_lengths), mel_padded

    def parse_ids(self, batch):
        # --- ok: the batch is only cast, never copied ---
        ids, lengths = batch
        return to_long(ids), to_long(lengths)

    def forward(self, inputs):
        return self.proj(self.embedding(inputs[0]))

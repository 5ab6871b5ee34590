# One finding per problem: the import and deepspeed.initialize carry the DeepSpeed engine; the calls that only
# configure or drive it and its ZeRO config are related locations (see the snapshot), not findings of their own.
import argparse
import torch
import deepspeed  # expect: TPU705

parser = argparse.ArgumentParser()
parser = deepspeed.add_config_arguments(parser)
cmd = parser.parse_args()
deepspeed.init_distributed()
model = torch.nn.Linear(4, 4)
ds_config = {"train_batch_size": 8, "zero_optimization": {"stage": 2}}  # TPU508 quiet: related of TPU705
engine, opt, _, _ = deepspeed.initialize(args=cmd, model=model, config=ds_config)  # expect: TPU705
for x in [torch.randn(2, 4)]:
    loss = engine(x).sum()
    engine.backward(loss)
    engine.step()

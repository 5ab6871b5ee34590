"""Loading an ensemble: one module built per checkpoint file and shard, no step runs on the device."""
import torch


def load_ensemble(filenames, task, cfg, num_shards=1, state=None):
    ensemble = []
    for filename in filenames:
        for shard_idx in range(num_shards):
            if state is None:
                state = torch.load(f"{filename}.{shard_idx}", map_location="cpu")
            if shard_idx == 0:
                model = task.build_model(cfg.model)
            model.load_state_dict(state["model"])
            state = None
        ensemble.append(model)
    return ensemble

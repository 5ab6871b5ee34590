# A config helper that does not import deepspeed: its ZeRO dict is the problem reported here.
def get_train_ds_config(stage=2):
    return {"train_batch_size": 8, "zero_optimization": {"stage": stage}}  # expect: TPU508

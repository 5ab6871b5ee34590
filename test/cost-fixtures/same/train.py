# nanoGPT-style config: the same values in .py, .yaml, .json and .toml, on the same lines
batch_size = 12
block_size = 1024
gradient_accumulation_steps = 5 * 8
max_iters = 5000
n_layer = 12
n_head = 12
n_embd = 768
vocab_size = 50304
dtype = 'bfloat16'

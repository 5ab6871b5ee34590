# a small character-level GPT (reduced from nanoGPT's shakespeare_char recipe shape)
out_dir = 'out-char'
eval_interval = 250
eval_iters = 200
dataset = 'shakespeare_char'
gradient_accumulation_steps = 1
batch_size = 64
block_size = 256
n_layer = 6
n_head = 6
n_embd = 384
max_iters = 5000
compile = True

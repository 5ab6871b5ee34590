#!/usr/bin/env bash
# Launch on one 8-GPU node.
export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
export NCCL_DEBUG=INFO
torchrun --nproc_per_node=8 train.py --compile

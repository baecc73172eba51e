"""Runnable examples shipped with perseus (manual 2.1.2): cd into this directory and launch them.

    python -m torch.distributed.launch --nproc_per_node=8 --nnodes=1 --node_rank=0 \
        --master_addr=localhost --master_port=6006 pytorch_ddp_benchmark.py
    torchrun --nproc_per_node=8 pytorch_horovod_benchmark.py
"""

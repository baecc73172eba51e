"""PyTorch DDP synthetic benchmark, accelerated by `import perseus` (manual 2.1.2).

    python -m torch.distributed.launch --nproc_per_node=$NP --nnodes=1 --node_rank=0 \
        --master_addr=$ADDR --master_port=$PORT pytorch_ddp_benchmark.py
    torchrun --nproc_per_node=$NP pytorch_ddp_benchmark.py --model resnet50   # torchvision models too

The only perseus-specific line is the first import. PERSEUS_* variables tune it (perseus doctor lists them).
"""

import perseus  # noqa: F401  (before torch: DistributedDataParallel then uses the perseus communication hook)

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from _synthetic import build_model, synthetic_batch


def parse_args():
    parser = argparse.ArgumentParser(description="PyTorch DDP synthetic benchmark on perseus",
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", default="small_cnn", help="small_cnn, mlp, or a torchvision model name")
    parser.add_argument("--batch-size", type=int, default=32, help="input batch size per process")
    parser.add_argument("--num-warmup-batches", type=int, default=5)
    parser.add_argument("--num-batches-per-iter", type=int, default=5)
    parser.add_argument("--num-iters", type=int, default=5)
    parser.add_argument("--no-cuda", action="store_true", help="train on the CPU even if CUDA is available")
    # torch.distributed.launch without --use_env passes the local rank as an argument
    parser.add_argument("--local_rank", "--local-rank", type=int, default=None, help=argparse.SUPPRESS)
    return parser.parse_args()


def main():
    args = parse_args()
    local_rank = int(os.environ.get("LOCAL_RANK", args.local_rank if args.local_rank is not None else 0))
    cuda = torch.cuda.is_available() and not args.no_cuda
    dist.init_process_group("nccl" if cuda else "gloo")
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    model = build_model(args.model).to(device)
    ddp = DDP(model, device_ids=[local_rank] if cuda else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01 * dist.get_world_size(), momentum=0.9)
    data, target = synthetic_batch(args.batch_size, device)

    def step():
        optimizer.zero_grad()
        loss = F.cross_entropy(ddp(data), target)
        loss.backward()
        optimizer.step()
        return loss

    def log(text):
        if dist.get_rank() == 0:
            print(text, flush=True)

    kind = "GPU" if cuda else "CPU"
    log("Model: {}  batch size: {}  processes: {} ({})".format(args.model, args.batch_size, dist.get_world_size(), kind))
    for _ in range(args.num_warmup_batches):
        step()
    rates = []
    for i in range(args.num_iters):
        start = time.perf_counter()
        for _ in range(args.num_batches_per_iter):
            loss = step()
        if cuda:
            torch.cuda.synchronize()
        rate = args.batch_size * args.num_batches_per_iter / (time.perf_counter() - start)
        rates.append(rate)
        log("Iter #{}: {:.1f} img/sec per {}  loss {:.4f}".format(i, rate, kind, loss.item()))
    mean = sum(rates) / len(rates)
    log("Img/sec per {}: {:.1f}".format(kind, mean))
    log("Total img/sec on {} {}(s): {:.1f}".format(dist.get_world_size(), kind, mean * dist.get_world_size()))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

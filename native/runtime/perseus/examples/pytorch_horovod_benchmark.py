"""PyTorch synthetic benchmark with the Horovod API on perseus (manual 4.4).

    perseusrun -np 8 -- python pytorch_horovod_benchmark.py          # mpirun style
    torchrun --nproc_per_node=8 pytorch_horovod_benchmark.py          # torch launcher style

A Horovod script needs one change: `import perseus.torch.horovod as hvd`.
"""

import argparse
import time

import torch
import torch.nn.functional as F

import perseus.torch.horovod as hvd
from _synthetic import build_model, synthetic_batch


def parse_args():
    parser = argparse.ArgumentParser(description="PyTorch synthetic benchmark, Horovod API on perseus",
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", default="small_cnn", help="small_cnn, mlp, or a torchvision model name")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-warmup-batches", type=int, default=5)
    parser.add_argument("--num-batches-per-iter", type=int, default=5)
    parser.add_argument("--num-iters", type=int, default=5)
    parser.add_argument("--fp16-allreduce", action="store_true", help="hvd.Compression.fp16 (see PERSEUS_ALLREDUCE_DTYPE)")
    parser.add_argument("--no-cuda", action="store_true")
    return parser.parse_args()


def main():
    args = parse_args()
    hvd.init()
    cuda = torch.cuda.is_available() and not args.no_cuda
    device = torch.device("cuda", hvd.local_rank()) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    model = build_model(args.model).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size(), momentum=0.9)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(), compression=compression)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    data, target = synthetic_batch(args.batch_size, device)

    def step():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
        return loss

    def log(text):
        if hvd.rank() == 0:
            print(text, flush=True)

    kind = "GPU" if cuda else "CPU"
    log("Model: {}  batch size: {}  processes: {} ({}), {} node(s)".format(
        args.model, args.batch_size, hvd.size(), kind, hvd.cross_size()))
    for _ in range(args.num_warmup_batches):
        step()
    rates = []
    for i in range(args.num_iters):
        start = time.perf_counter()
        for _ in range(args.num_batches_per_iter):
            loss = step()
        rate = args.batch_size * args.num_batches_per_iter / (time.perf_counter() - start)
        rates.append(rate)
        log("Iter #{}: {:.1f} img/sec per {}  loss {:.4f}".format(i, rate, kind, loss.item()))
    mean = sum(rates) / len(rates)
    log("Img/sec per {}: {:.1f}".format(kind, mean))
    log("Total img/sec on {} {}(s): {:.1f}".format(hvd.size(), kind, mean * hvd.size()))
    hvd.shutdown()


if __name__ == "__main__":
    main()

"""An elastic torch training for tests/run/test_elastic.py and bench/elastic_bench.py: linear regression in
float64 with hvd.elastic.run, TorchState, ElasticSampler and hvd.DistributedOptimizer.

    elastic_train.py OUT_DIR TOTAL_STEPS STEP_SECONDS [COMMIT_EVERY]

Every rank writes OUT_DIR/pid.<host>_<slot> (its pid, so a test can kill it); rank 0 writes OUT_DIR/progress
(`step size`) after each step and, at the end, OUT_DIR/result.json: the final weights and, per committed step,
the world size and each rank's sample indices, which is all a reference computation needs. The history is part
of the committed state, so a step lost with a worker is not in it. ELASTIC_TEST_CRASH=N makes the last rank
of every generation exit with code 3 after N steps in that generation. ELASTIC_TEST_HOLD=8,16 makes every rank
wait before the step after step 8 (and 16) until rank 0 sees OUT_DIR/go.8 (asked through a broadcast every 50 ms,
so a rank lost meanwhile is noticed), so a test can change the hosts at a known step.
"""

import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
import elastic_files  # noqa: E402

import perseus.torch.horovod as hvd

SAMPLES, FEATURES, BATCH, LR = 48, 4, 2, 0.05


def data():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(SAMPLES, FEATURES, generator=g, dtype=torch.float64)
    y = x @ torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64) + 0.1 * torch.randn(SAMPLES, generator=g, dtype=torch.float64)
    return x, y


def progress(out, step, size):
    elastic_files.write_progress(out, hvd.rank(), step, size)


def main() -> None:
    out, total, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    commit_every = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    crash_after = int(os.environ.get("ELASTIC_TEST_CRASH", "0"))
    holds = elastic_files.hold_steps()
    elastic_files.write_pid(out)
    x, y = data()
    hvd.init()
    model = torch.nn.Linear(FEATURES, 1, bias=False).double()
    with torch.no_grad():
        model.weight.zero_()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=LR),
                                         named_parameters=model.named_parameters())
    sampler = hvd.elastic.ElasticSampler(list(range(SAMPLES)), shuffle=True, seed=7)
    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, step=0, history=[])

    @hvd.elastic.run
    def train(state):
        in_generation = 0
        while state.step < total:
            batch = 0
            iter(state.sampler)
            while batch * BATCH < len(state.sampler.indices) and state.step < total:
                while state.step in holds and not hvd.broadcast_object(elastic_files.released(out, state.step)):
                    progress(out, state.step, hvd.size())  # every rank in a collective: a lost one is noticed
                    time.sleep(0.05)
                indices = state.sampler.get_indices(batch, BATCH)
                optimizer.zero_grad()
                loss = ((model(x[indices]).squeeze(1) - y[indices]) ** 2).mean()
                loss.backward()
                optimizer.step()
                parts = hvd.allgather_object(list(indices))
                state.sampler.record_batch(batch, BATCH)
                state.history = state.history + [{"size": hvd.size(), "parts": parts,
                                                   "weights": model.weight.detach().flatten().tolist()}]
                state.step += 1
                batch += 1
                in_generation += 1
                progress(out, state.step, hvd.size())
                if crash_after and in_generation >= crash_after and hvd.rank() == hvd.size() - 1:
                    print("CRASH on purpose at step {} (rank {} of {})".format(state.step, hvd.rank(), hvd.size()), flush=True)
                    os._exit(3)
                time.sleep(pause)
                if state.step % commit_every == 0:
                    print("COMMIT step {} size {} rank {}".format(state.step, hvd.size(), hvd.rank()), flush=True)
                    state.commit()
            if batch * BATCH >= len(state.sampler.indices):
                state.epoch += 1
                state.sampler.set_epoch(state.epoch)

    train(state)
    if hvd.rank() == 0:
        result = {"weights": model.weight.detach().flatten().tolist(), "history": state.history}
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump(result, f)
    print("DONE rank {} of {}".format(hvd.rank(), hvd.size()), flush=True)


if __name__ == "__main__":
    main()

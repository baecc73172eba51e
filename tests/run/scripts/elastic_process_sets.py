"""An elastic job with process sets, torch or TensorFlow 2, for tests/run/test_elastic.py and
tests/tensorflow/test_tf_elastic.py (through tests/support/elastic.py): what becomes of the sets registered before a
reset.

    elastic_process_sets.py OUT_DIR TOTAL_STEPS torch|tensorflow

hvd.init(process_sets=[ProcessSet([0, 1])]) registers `first`; hvd.add_process_set([0, size - 1]) registers `last`.
Every step allreduces rank + 1 over the job and over each set this rank is in; rank 0 records, per step, the size
and every rank's results. A reset callback first calls a collective on each set registered before the reset
(and prints what refused it: `REFUSED <message>`), then registers them again over the new job: `first` (the same
object) and `last` as [0, new size - 1]. With torch, every step also takes an SGD step of
hvd.DistributedOptimizer(process_set=first) on a one-weight model whose gradient is rank + 1, and records the
gradient the optimizer stepped with (the members' mean; a rank outside `first` keeps its own); the state is an
hvd.elastic.TorchState of the model and the optimizer (an ObjectState with TensorFlow). Commits after every second
step; the files and ELASTIC_TEST_HOLD are those of elastic_train.py (tests/support/elastic_files.py). Rank 0
writes OUT_DIR/result.json at the end.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
import elastic_files  # noqa: E402

FRAMEWORK = sys.argv[3]
if FRAMEWORK == "torch":
    import torch

    import perseus.torch.horovod as hvd

    def tensor(value: float):
        return torch.tensor([value], dtype=torch.float64)

    def number(result) -> float:
        return float(result.item())

    def make_state(first, **values):
        """A TorchState of a one-weight model and its DistributedOptimizer over `first`, and the step function."""
        model = torch.nn.Linear(1, 1, bias=False).double()
        optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                             named_parameters=model.named_parameters(), process_set=first)

        def train_step() -> float:
            optimizer.zero_grad()
            (model.weight.sum() * (hvd.rank() + 1)).backward()
            optimizer.step()
            return float(model.weight.grad.item())
        return hvd.elastic.TorchState(model, optimizer, **values), train_step
elif FRAMEWORK == "tensorflow":
    import tensorflow as tf

    import perseus.tensorflow.horovod as hvd

    def tensor(value: float):
        return tf.constant([value], dtype=tf.float64)

    def number(result) -> float:
        return float(result.numpy()[0])

    def make_state(first, **values):
        return hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, **values), None
else:
    raise SystemExit("elastic_process_sets.py: the third argument is torch or tensorflow, not {!r}".format(FRAMEWORK))


def main() -> None:
    out, total = sys.argv[1], int(sys.argv[2])
    holds = elastic_files.hold_steps()
    elastic_files.write_pid(out)
    first = hvd.ProcessSet([0, 1])
    hvd.init(process_sets=[first])
    sets = {"first": first, "last": hvd.add_process_set([0, hvd.size() - 1])}
    refusals = []

    def register_again() -> None:
        for name in sorted(sets):
            try:
                hvd.allreduce(tensor(1.0), process_set=sets[name])
                refusals.append("{}: not refused".format(name))
            except ValueError as error:
                print("REFUSED {}".format(error), flush=True)
                refusals.append("{}: {}".format(name, error))
        sets["first"] = hvd.add_process_set(sets["first"])
        sets["last"] = hvd.add_process_set([0, hvd.size() - 1])

    state, train_step = make_state(first, step=0, history=[])
    state.register_reset_callbacks([register_again])

    @hvd.elastic.run
    def train(state):
        while state.step < total:
            while state.step in holds and not hvd.broadcast_object(elastic_files.released(out, state.step)):
                elastic_files.write_progress(out, hvd.rank(), state.step, hvd.size())
                time.sleep(0.05)
            mine = tensor(float(hvd.rank() + 1))
            row = {"global": number(hvd.allreduce(mine, op=hvd.Sum))}
            for name in sorted(sets):
                if sets[name].included():
                    row[name] = [sets[name].ranks, number(hvd.allreduce(mine, op=hvd.Sum, process_set=sets[name]))]
            if train_step is not None:
                row["grad"] = train_step()
            state.history = state.history + [{"size": hvd.size(), "ranks": hvd.allgather_object(row)}]
            state.step += 1
            elastic_files.write_progress(out, hvd.rank(), state.step, hvd.size())
            if state.step % 2 == 0:
                state.commit()

    train(state)
    if hvd.rank() == 0:
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump({"history": state.history, "refusals": refusals}, f)
    print("DONE rank {} of {}".format(hvd.rank(), hvd.size()), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The PyTorch peer of tests/benchmarks/mlp_benchmark.cpp (issue 42): an SGLD iteration of a
Bayesian MLP written as a PyTorch user writes it, one thread.

  digits: 64 -> 50 tanh -> 10 softmax on scikit-learn's digits (the CSV given, its first 1,500
          rows), batch 100
  mnist:  784 -> 400 -> 400 -> 10 relu on 60,000 simulated rows, batch 128

An iteration: the next batch of a shuffled epoch, the summed cross-entropy scaled by N/n plus the
N(0, 1) prior's |θ|²/2, backward, and θ ← θ - (h/2) ∇U + √h ξ for every parameter. Prints µs per
SGLD iteration, wall-clock and the process's CPU time, each the fastest of 5 runs.
Usage: /usr/bin/python3 tests/benchmarks/mlp_torch.py plugins/mlp/digits.csv.gz digits|mnist float64|float32
"""
import gzip
import os
import sys
import time

# One thread: torch.set_num_threads governs torch's own pool, but Debian's torch does its matrix
# products in OpenBLAS, whose threads only these variables limit, read when the library loads. Without
# them a float64 MNIST iteration spent 36 ms of CPU in 22 ms of wall time: two cores.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402 (after the thread settings)
import torch  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(1)
path, shape, dtype_name = sys.argv[1], sys.argv[2], sys.argv[3]
dtype = {"float64": torch.float64, "float32": torch.float32}[dtype_name]
STEP, REPETITIONS = 1e-5, 5

if shape == "digits":
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",")[:1500]
    X = torch.tensor(table[:, 1:], dtype=dtype)
    y = torch.tensor(table[:, 0], dtype=torch.long)
    widths, activation, BATCH, ITERATIONS = [64, 50, 10], torch.nn.Tanh, 100, 2000
else:
    X = torch.randn(60_000, 784, dtype=dtype)
    y = torch.randint(0, 10, (60_000,))
    widths, activation, BATCH, ITERATIONS = [784, 400, 400, 10], torch.nn.ReLU, 128, 300
N = X.shape[0]

layers = []
for i, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:])):
    layers.append(torch.nn.Linear(fan_in, fan_out, dtype=dtype))
    if i + 2 < len(widths):
        layers.append(activation())
net = torch.nn.Sequential(*layers)
params = list(net.parameters())


def batches():
    """Batches of a fresh shuffle, epoch after epoch."""
    while True:
        order = torch.randperm(N)
        for start in range(0, N - BATCH + 1, BATCH):
            yield order[start:start + BATCH]


def sgld_iteration(b):
    loss = torch.nn.functional.cross_entropy(net(X[b]), y[b], reduction="sum") * (N / BATCH)
    loss = loss + sum((p * p).sum() for p in params) / 2
    net.zero_grad(set_to_none=True)
    loss.backward()
    with torch.no_grad():
        for p in params:
            p.add_(p.grad, alpha=-STEP / 2).add_(torch.randn_like(p), alpha=STEP ** 0.5)


def fastest(work):
    """µs per call of work: the fastest run's wall-clock time and the fastest run's CPU time."""
    best_wall = best_cpu = float("inf")
    stream = batches()
    for _ in range(REPETITIONS):
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(ITERATIONS):
            work(next(stream))
        best_wall = min(best_wall, (time.perf_counter() - wall) / ITERATIONS * 1e6)
        best_cpu = min(best_cpu, (time.process_time() - cpu) / ITERATIONS * 1e6)
    return best_wall, best_cpu


d = sum(p.numel() for p in params)
print(f"torch {torch.__version__}, 1 thread, {shape} {'-'.join(map(str, widths))}, {dtype_name}, N = {N}, d = {d}, "
      f"batch {BATCH} (µs, fastest of {REPETITIONS}: wall, CPU)")
print("  SGLD iteration  {:10.1f} {:10.1f}".format(*fastest(sgld_iteration)))

#!/usr/bin/python3
"""The PyTorch peer of tests/benchmarks/pmf_benchmark.cpp (issue #6): the same work, written the
way one would in PyTorch, on data of the same shape (90,000 training ratings, 943 users, 1,679 items
with ratings, rank 20, batch 5,000), one thread. Prints µs per data gradient and per SGLD
iteration (data gradient, dense prior gradient, d normal draws, the move), fastest of 5 runs of
200. Usage: /usr/bin/python3 tests/benchmarks/pmf_torch.py
"""
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(1)
USERS, ITEMS, N, RANK, BATCH, TAU, EPS = 943, 1679, 90_000, 20, 5000, 2.0, 2e-3
ITERATIONS, REPETITIONS = 200, 5

user = torch.randint(0, USERS, (N,))
item = torch.randint(0, ITEMS, (N,))
rating = torch.randn(N, dtype=torch.float64)
U = 0.1 * torch.randn(USERS, RANK, dtype=torch.float64)
V = 0.1 * torch.randn(ITEMS, RANK, dtype=torch.float64)
mean_u = torch.zeros(RANK, dtype=torch.float64)
mean_v = torch.zeros(RANK, dtype=torch.float64)
precision_u = torch.ones(RANK, dtype=torch.float64)
precision_v = torch.ones(RANK, dtype=torch.float64)
batches = [torch.randperm(N)[:BATCH] for _ in range(ITERATIONS)]


def data_gradient(b, gu, gv):
    """gu[U_i] += -τ e V_j, gv[V_j] += -τ e U_i over the batch, weighted N/n (SGLD's estimate)."""
    i, j = user[b], item[b]
    ui, vj = U.index_select(0, i), V.index_select(0, j)
    s = (-(N / BATCH) * TAU) * (rating[b] - (ui * vj).sum(1))
    gu.index_add_(0, i, s[:, None] * vj)
    gv.index_add_(0, j, s[:, None] * ui)


def sgld_iteration(b):
    gu = precision_u * (U - mean_u)  # the dense prior gradient
    gv = precision_v * (V - mean_v)
    data_gradient(b, gu, gv)
    U.add_(-0.5 * EPS * gu + EPS ** 0.5 * torch.randn_like(U))
    V.add_(-0.5 * EPS * gv + EPS ** 0.5 * torch.randn_like(V))


def fastest(work):
    best = float("inf")
    for _ in range(REPETITIONS):
        start = time.perf_counter()
        for b in batches:
            work(b)
        best = min(best, (time.perf_counter() - start) / ITERATIONS * 1e6)
    return best


gu, gv = torch.zeros_like(U), torch.zeros_like(V)
print(f"torch {torch.__version__}, 1 thread, rank {RANK}, batch {BATCH}, N = {N} (µs, fastest of {REPETITIONS})")
print(f"  data gradient   {fastest(lambda b: data_gradient(b, gu, gv)):10.1f}")
print(f"  SGLD iteration  {fastest(sgld_iteration):10.1f}")

#!/usr/bin/env python3
"""Writes simulated logistic-regression rows of cover type's shape as one float32 .npy file.

The data of the data-parallel memory and scaling measurements (tests/benchmarks/README.md,
"Data-parallel chains: each rank's memory for the data"): rows x (label, 54 features), the layout
`sgmcmc convert --dtype float32` writes, so
that `logistic` with `model.storage = "float"` reads the features without a conversion. As the
plugin's own simulation (plugins/logistic/logistic.cpp): 10 continuous features uniform on [0, 1),
one of 4 wilderness areas and one of 40 soil types set to 1, and y = +1 with probability
sigma(beta*_0 + x' beta*), beta*_j = 2 sin(1 + j); y is written as -1/+1 (run with
`model.labels = "-1/+1"`). Python's standard library only (no NumPy): a NEP 1 version 1.0 header,
then the values little-endian.

    python3 tests/benchmarks/logistic_npy.py ROWS OUT.npy [--seed 1]
"""
import argparse
import math
import random
import sys
from array import array

CONTINUOUS, WILDERNESS, SOIL = 10, 4, 40
FEATURES = CONTINUOUS + WILDERNESS + SOIL


def header(rows: int) -> bytes:
    text = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, FEATURES + 1)
    # magic (6) + version (2) + length (2) + text + '\n', padded with spaces to a multiple of 64.
    length = 10 + len(text) + 1
    text += " " * ((64 - length % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin1")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", type=int)
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if sys.byteorder != "little":
        raise SystemExit("writes little-endian values in place: run on a little-endian machine")
    rng = random.Random(args.seed)
    beta = [2.0 * math.sin(1.0 + j) for j in range(FEATURES + 1)]
    with open(args.out, "wb") as out:
        out.write(header(args.rows))
        chunk = array("f")
        for i in range(args.rows):
            row = [0.0] * (FEATURES + 1)
            z = beta[0]
            for j in range(CONTINUOUS):
                row[1 + j] = value = rng.random()
                z += beta[1 + j] * value
            for first, count in ((CONTINUOUS, WILDERNESS), (CONTINUOUS + WILDERNESS, SOIL)):
                j = first + rng.randrange(count)
                row[1 + j] = 1.0
                z += beta[1 + j]
            row[0] = 1.0 if rng.random() < 1.0 / (1.0 + math.exp(-z)) else -1.0
            chunk.extend(row)
            if len(chunk) >= (1 << 22) or i + 1 == args.rows:
                chunk.tofile(out)
                chunk = array("f")
    return 0


if __name__ == "__main__":
    sys.exit(main())

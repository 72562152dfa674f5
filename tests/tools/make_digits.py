#!/usr/bin/python3
"""Writes plugins/mlp/digits.csv.gz: scikit-learn's copy of the UCI optical recognition of
handwritten digits (Alpaydin & Kaynak 1998; 1,797 images of 8 x 8 pixels with values 0..16), one
row per image, the label 0..9 first, then the 64 pixels scaled to [0, 1] (value / 16, exact in
decimal). The gzip stream has no name and a zero time stamp, so the same input gives the same bytes.

Usage: /usr/bin/python3 tests/tools/make_digits.py [OUTPUT]   (needs Debian's python3-sklearn)
"""
import gzip
import pathlib
import sys

from sklearn.datasets import load_digits

output = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                      pathlib.Path(__file__).resolve().parents[2] / "plugins" / "mlp" / "digits.csv.gz")
digits = load_digits()
lines = []
for label, pixels in zip(digits.target, digits.data):
    lines.append(",".join([str(int(label))] + [f"{value / 16:g}" for value in pixels]))
text = "\n".join(lines) + "\n"
with open(output, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as out:
    out.write(text.encode())
print(f"{output}: {len(lines)} rows, {len(text)} bytes of CSV, {output.stat().st_size} bytes compressed")

#!/usr/bin/python3
"""ECDF-difference plots of an `sgmcmc sbc` folder: what `sgmcmc sbc` runs at its end.

Reads DIR/ecdf.csv (per parameter and point z_k = k/(L+1): ECDF(z_k) - z_k and the simultaneous
band's limits, minus z_k) and DIR/tests.csv (the verdicts), and writes DIR/sbc_ecdf.png: one panel
per parameter, the ECDF difference as a step line, the 1 - alpha simultaneous band shaded
(Säilynoja, Bürkner & Vehtari 2022, Figure 1's layout), the verdict in the title.

  runners/figures/sbc_plot.py DIR [--max-panels 12]

Needs Debian's python3-matplotlib.
"""
import argparse
import csv
import math
import sys
from collections import defaultdict
from pathlib import Path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--max-panels", type=int, default=12)
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("sbc_plot.py: needs matplotlib (Debian: apt install python3-matplotlib)", file=sys.stderr)
        return 2
    for name in ("ecdf.csv", "tests.csv"):
        if not (args.folder / name).is_file():
            print(f"sbc_plot.py: {args.folder / name} is missing: not an `sgmcmc sbc` folder?", file=sys.stderr)
            return 2
    curves = defaultdict(lambda: defaultdict(list))
    with open(args.folder / "ecdf.csv", newline="") as f:
        for row in csv.DictReader(f):
            for key in ("z", "ecdf_difference", "lower", "upper"):
                curves[row["parameter"]][key].append(float(row[key]))
    tests = {}
    with open(args.folder / "tests.csv", newline="") as f:
        for row in csv.DictReader(f):
            tests[row["parameter"]] = row
    names = list(curves)[: args.max_panels]
    columns = min(4, len(names))
    rows = math.ceil(len(names) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(3.6 * columns, 3.0 * rows), squeeze=False, dpi=100)
    for panel, name in zip(axes.flat, names):
        c = curves[name]
        z = [0.0] + c["z"] + [1.0]
        panel.fill_between(z, [0.0] + c["lower"] + [0.0], [0.0] + c["upper"] + [0.0], step="post", color="0.85",
                           label=f"{100 * (1 - float(tests[name]['alpha'])):.0f}% simultaneous band")
        panel.step(z, [0.0] + c["ecdf_difference"] + [0.0], where="post", color="C0" if tests[name]["verdict"] == "calibrated" else "C3")
        panel.axhline(0.0, color="0.5", linewidth=0.5)
        t = tests[name]
        panel.set_title(f"{name}: {t['verdict']}\nECDF p = {float(t['ecdf_p']):.3g}, χ² p = {float(t['chi_square_p']):.3g}", fontsize=9)
        panel.set_xlabel("fractional rank z")
        panel.set_ylabel("ECDF(z) - z")
        panel.set_xlim(0, 1)
    for panel in list(axes.flat)[len(names):]:
        panel.axis("off")
    first = tests[names[0]]
    figure.suptitle(f"SBC: {first['replications']} replications, ranks among {first['max_rank']} draws", fontsize=10)
    figure.tight_layout()
    figure.savefig(args.folder / "sbc_ecdf.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())

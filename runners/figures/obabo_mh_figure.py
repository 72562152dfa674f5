#!/usr/bin/env python3
"""Garriga-Alonso & Fortuin (2021)'s point on a network: OBABO + MH on `mlp-digits-obabo-mh`.

    /usr/bin/python3 runners/figures/obabo_mh_figure.py --sgmcmc build/release/bin/sgmcmc --out runs/obabo-mh

Through the real CLI, on the preset's digits network after its SGHMC burn-in:
  1. the acceptance of OBABO + MH (minibatch endpoints, step fixed: no adaptation) against the
     block length K and the step h, and against the batch size at K = 10;
  2. SGHMC + MH, which the CLI refuses with its reason (quoted as it says it);
  3. held-out accuracy and log predictive density of the running posterior predictive against
     CPU seconds for SGLD, SGHMC (mlp-digits), OBABO uncorrected and OBABO + MH (the preset, its
     curve shifted right by its burn-in's CPU seconds, which metrics.csv does not count).
Writes obabo_mh_table.md and obabo_mh_figure.png into --out and prints the table. Runs one after
another, 2 chains each (about 2-3 minutes on 2 cores).
"""
import argparse
import csv
import json
import pathlib
import subprocess
import sys

PRESET = "mlp-digits-obabo-mh"
K_GRID = (1, 5, 10, 20)
H_GRID = (2.5e-4, 5e-4, 1e-3, 2e-3)
BATCH_GRID = (25, 50, 100, 200, 500)
BATCH_H = 1e-3  # the step of the batch-size row (K = 10)
# Acceptance runs: no warmup (the step is fixed), 2,000 iterations = 200 blocks of 10 per chain.
SHORT = {"integrator.adapt_step_size": "false", "run.warmup": 0, "run.iterations": 2000, "run.thin": 20,
         "run.eval_every": 100}


def sgmcmc_run(sgmcmc, preset, settings, out):
    """Runs `sgmcmc run --preset ...`; returns (exit code, output, manifest or None)."""
    command = [sgmcmc, "run", "--preset", preset, "--out", str(out), "--replace", "--quiet"]
    for key, value in settings.items():
        command += ["--set", f"{key}={value}"]
    result = subprocess.run(command, capture_output=True, text=True)
    manifest_file = out / "manifest.json"
    manifest = json.loads(manifest_file.read_text()) if result.returncode == 0 and manifest_file.exists() else None
    return result.returncode, result.stdout + result.stderr, manifest


def acceptance(manifest):
    """Accepted blocks over all chains' recorded blocks."""
    blocks = sum(c["blocks"] for c in manifest["chains"])
    return sum(c["accepted_blocks"] for c in manifest["chains"]) / blocks


def checked(sgmcmc, preset, settings, out):
    code, said, manifest = sgmcmc_run(sgmcmc, preset, settings, out)
    if code != 0:
        sys.exit(f"sgmcmc run --preset {preset} {settings}: exit {code}\n{said}")
    return manifest


def acceptance_tables(sgmcmc, out):
    """Markdown lines: acceptance against K × h, and against the batch size; and those numbers
    ({K: [acceptance at each h]}, [acceptance at each batch size]) for the plot."""
    by_k, by_batch = {}, []
    lines = ["## Acceptance of OBABO + MH (minibatch endpoints, fixed h, 2 chains × 200 blocks after the burn-in)",
             "", "| K \\ h | " + " | ".join(f"{h:g}" for h in H_GRID) + " |",
             "|---|" + "---|" * len(H_GRID)]
    for k in K_GRID:
        for h in H_GRID:
            settings = dict(SHORT, **{"corrector.every": k, "integrator.step_size": h})
            by_k.setdefault(k, []).append(acceptance(checked(sgmcmc, PRESET, settings, out / f"k{k}-h{h:g}")))
        cells = [f"{a:.3f}" for a in by_k[k]]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    lines += ["", f"Against the batch size (K = 10, h = {BATCH_H:g}):", "",
              "| batch size | " + " | ".join(str(b) for b in BATCH_GRID) + " |", "|---|" + "---|" * len(BATCH_GRID)]
    for batch in BATCH_GRID:
        settings = dict(SHORT, **{"corrector.every": 10, "integrator.step_size": BATCH_H, "estimator.batch_size": batch})
        by_batch.append(acceptance(checked(sgmcmc, PRESET, settings, out / f"batch{batch}")))
    lines.append("| acceptance | " + " | ".join(f"{a:.3f}" for a in by_batch) + " |")
    return lines, by_k, by_batch


def sghmc_refusal(sgmcmc, out):
    code, said, _ = sgmcmc_run(sgmcmc, PRESET, {"integrator.name": "sghmc"}, out / "sghmc-mh")
    if code == 0:
        sys.exit("SGHMC + MH ran: it must be refused")
    return ["## SGHMC + MH", "", f"`sgmcmc run --preset {PRESET} --set integrator.name=sghmc` exits {code}:", "",
            "> " + "\n> ".join(line for line in said.strip().splitlines() if "error" in line)]


# label, preset, settings: the four samplers of the accuracy-against-seconds panels.
SAMPLERS = [
    ("SGLD", "mlp-digits", {"integrator.name": "sgld", "integrator.step_size": 2e-3}),
    ("SGHMC", "mlp-digits", {}),
    ("OBABO", "mlp-digits", {"integrator.name": "obabo"}),
    ("OBABO + MH (K = 10)", PRESET, {}),
]


def metric_curves(sgmcmc, out):
    """(label, chain) -> rows of metrics.csv with cpu_seconds including the burn-in's; and the table lines."""
    curves = {}
    lines = ["## Held-out accuracy and log predictive density against CPU seconds", "",
             "| sampler | step | chain | CPU s (burn-in + run) | accuracy | log predictive density |",
             "|---|---|---|---|---|---|"]
    for label, preset, settings in SAMPLERS:
        name = label.split(" ")[0].lower() + ("-mh" if "MH" in label else "")
        manifest = checked(sgmcmc, preset, settings, out / name)
        with open(out / name / "metrics.csv", newline="") as f:
            rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
        for chain in manifest["chains"]:
            k = chain["chain"]
            burn = chain.get("burn_in", {}).get("cpu_seconds", 0.0)
            own = [dict(r, cpu_seconds=r["cpu_seconds"] + burn) for r in rows if r["chain"] == k]
            curves[(label, k)] = own
            step = chain.get("adapted_step_size", chain["step_size"])
            lines.append(f"| {label} | {step:.2g} | {k} | {own[-1]['cpu_seconds']:.2f} | {own[-1]['accuracy']:.3f} | "
                         f"{own[-1]['log_predictive_density']:.3f} |")
    return curves, lines


def plot(by_k, by_batch, curves, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 4, figsize=(21, 4.5))
    for k, row in by_k.items():
        axes[0].plot(H_GRID, row, marker="o", label=f"K = {k}")
    axes[0].set_xscale("log")
    axes[0].set_xlabel("step h (fixed)")
    axes[0].set_ylabel("MH acceptance")
    axes[0].set_title("OBABO + MH after the burn-in (batch 100)")
    axes[0].legend()
    axes[3].plot(BATCH_GRID, by_batch, marker="o", color="C2")
    axes[3].set_xscale("log")
    axes[3].set_xlabel("batch size")
    axes[3].set_ylabel("MH acceptance")
    axes[3].set_title(f"K = 10, h = {BATCH_H:g}")
    colours = {label: f"C{i}" for i, (label, _, _) in enumerate(SAMPLERS)}
    for (label, chain), rows in curves.items():
        kwargs = {"color": colours[label], "label": label if chain == 1 else None}
        axes[1].plot([r["cpu_seconds"] for r in rows], [r["accuracy"] for r in rows], **kwargs)
        axes[2].plot([r["cpu_seconds"] for r in rows], [r["log_predictive_density"] for r in rows], **kwargs)
    axes[1].set_ylim(0.85, 1.0)
    axes[2].set_ylim(-0.6, 0.0)
    for ax, what in ((axes[1], "held-out accuracy"), (axes[2], "held-out log predictive density")):
        ax.set_xlabel("CPU seconds (a chain's, burn-in included)")
        ax.set_ylabel(what)
        ax.legend()
    figure.tight_layout()
    figure.savefig(png, dpi=90)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sgmcmc", required=True, help="the sgmcmc binary")
    parser.add_argument("--out", required=True, type=pathlib.Path, help="folder for the runs, table and PNG")
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)

    lines = [f"# OBABO + MH on `{PRESET}` (Garriga-Alonso & Fortuin 2021)", "",
             "Made by `runners/figures/obabo_mh_figure.py` (random seed 1, 2 chains each).", ""]
    table, by_k, by_batch = acceptance_tables(options.sgmcmc, options.out)
    lines += table + [""] + sghmc_refusal(options.sgmcmc, options.out) + [""]
    curves, metric_lines = metric_curves(options.sgmcmc, options.out)
    lines += metric_lines
    text = "\n".join(lines) + "\n"
    (options.out / "obabo_mh_table.md").write_text(text)
    plot(by_k, by_batch, curves, options.out / "obabo_mh_figure.png")
    print(text)
    print(f"-> {options.out / 'obabo_mh_table.md'}, {options.out / 'obabo_mh_figure.png'}")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Figures of a finished `sgmcmc sweep`: what `sgmcmc plot DIR` runs.

Reads DIR/results.csv and DIR/summary.csv and writes, named after the sweep's folder NAME:

  NAME-seconds.png    the metric against seconds (wall or CPU, see --time), one line per method, one
                      panel per value of --panel
  NAME-gradients.png  the same against item gradients (the research measure of cost)
  NAME-final.png      box plots of the final metric across seeds (the --seed-axis values), one box
                      per method, one panel per value of --panel (only when the sweep has that axis)
  NAME-plot.json      what was drawn: per figure, its pixel size and per panel its lines (label,
                      points) or boxes (label, values), read back from the figure itself

A method is one combination of the values of the axes other than the panel and seed axes and
the axes that follow the panel axis (one value per panel: zipped with it, like the step size with
model.subsample in Figure 1; the panel titles show them). Its line is the mean over seeds and
chains at each evaluation (x: the mean seconds or item gradients there, which differ slightly
between seeds).

Which seconds: cells that ran at the same time on one machine shared its cores and memory
bandwidth, so their wall seconds cannot be compared; their chains' CPU seconds can. --time auto
(the default) draws against CPU seconds when summary.csv's concurrent_cells says some cells ran
concurrently, else against wall seconds, and says which.

  runners/figures/sweep_plot.py DIR [--panel model.subsample] [--metric NAME] [--time auto|wall|cpu]
                                    [--seed-axis run.seed] [--out FOLDER] [--name NAME]

Needs Debian's python3-matplotlib.
"""
import argparse
import csv
import difflib
import io
import json
import sys
from collections import defaultdict
from pathlib import Path

TIME_COLUMNS = {"wall": ("seconds", "wall seconds"), "cpu": ("cpu_seconds", "CPU seconds")}
PANEL_WIDTH, PANEL_HEIGHT, DPI = 4.5, 3.6, 100  # inches per panel, dots per inch


def fail(message):
    print(f"sgmcmc plot: error: {message}", file=sys.stderr)
    sys.exit(2)


def read_table(path):
    """The header and rows of a sweep table; a row with too few or too many fields (a cut or
    damaged file) fails naming its line."""
    if not path.is_file():
        fail(f"{path}: missing; give the output folder of a finished `sgmcmc sweep`")
    try:
        text = path.read_text(encoding="utf-8")
        reader = csv.DictReader(io.StringIO(text, newline=""))
        rows = list(reader)
        header = reader.fieldnames or []
    except (UnicodeDecodeError, csv.Error) as error:
        fail(f"{path}: not a sweep table ({error})")
    if text and not text.endswith("\n"):  # sgmcmc ends every line: the last one was cut
        fail(f"{path}: its last line is cut (no line end); a damaged file: run the sweep again with --resume")
    for line, row in enumerate(rows, start=2):
        fields = sum(value is not None for key, value in row.items() if key is not None) + len(row.get(None, []))
        if fields != len(header):
            fail(f"{path}:{line}: {fields} fields, expected {len(header)} (a cut or damaged file: run the sweep "
                 "again with --resume)")
    return header, rows


def check_numbers(path, rows, columns):
    """Fails naming the line of the first value of `columns` that is neither empty nor a number."""
    for line, row in enumerate(rows, start=2):
        for column in columns:
            try:
                if row[column] != "":
                    float(row[column])
            except ValueError:
                fail(f"{path}:{line}: {column} = '{row[column]}' is not a number (a damaged file: run the sweep "
                     "again with --resume)")


def check_choice(what, name, choices):
    if name in choices:
        return
    close = difflib.get_close_matches(name, choices, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    fail(f"{what} '{name}' is not in this sweep{hint}; it has: {', '.join(choices) or 'none'}")


def label(axes, values):
    return ", ".join(f"{axis}={value}" for axis, value in zip(axes, values)) or "all cells"


def mean(values):
    return sum(values) / len(values)


def curves(rows, metric, x_column, panel_axis, method_axes):
    """{panel value: {method values: [(x, y) per iteration]}}, means over seeds and chains."""
    points = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for row in rows:
        if row[metric] == "":
            continue
        panel = row[panel_axis] if panel_axis else ""
        method = tuple(row[axis] for axis in method_axes)
        points[panel][method][int(row["iteration"])].append((float(row[x_column]), float(row[metric])))
    return {panel: {method: [(mean([p[0] for p in at[i]]), mean([p[1] for p in at[i]])) for i in sorted(at)]
                    for method, at in methods.items()}
            for panel, methods in points.items()}


def follows(axis, panel_axis, summary):
    """True when `axis` takes one value per value of the panel axis (zipped with it)."""
    seen = {}
    for row in summary:
        if seen.setdefault(row[panel_axis], row[axis]) != row[axis]:
            return False
    return True


def panel_titles(panel_axis, tied_axes, summary):
    """{panel value: its title}, naming the tied axes' values too."""
    titles = {}
    for row in summary:
        title = f"{panel_axis} = {row[panel_axis]}" if panel_axis else ""
        tied = ", ".join(f"{axis} = {row[axis]}" for axis in tied_axes)
        titles[row[panel_axis] if panel_axis else ""] = f"{title}\n{tied}" if tied else title
    return titles


def new_figure(plt, panels):
    figure, axes = plt.subplots(1, len(panels), figsize=(PANEL_WIDTH * len(panels), PANEL_HEIGHT), dpi=DPI,
                                squeeze=False, constrained_layout=True)
    return figure, axes[0]


def save(figure, path, panels_drawn):
    figure.savefig(path, dpi=DPI)
    width, height = (figure.get_size_inches() * DPI).round().astype(int)
    return {"file": path.name, "width_px": int(width), "height_px": int(height), "panels": panels_drawn}


def line_figure(plt, data, args, panels, titles, methods, method_axes, x_column, x_label, path):
    figure, axes = new_figure(plt, panels)
    colours = {method: f"C{k % 10}" for k, method in enumerate(methods)}
    drawn = []
    for ax, panel in zip(axes, panels):
        for method in methods:
            line = data.get(panel, {}).get(method)
            if line:
                ax.plot([p[0] for p in line], [p[1] for p in line], color=colours[method], label=label(method_axes, method))
        ax.set_title(titles[panel], fontsize="medium")
        ax.set_xlabel(x_label)
        ax.set_ylabel(args.metric)
        if x_column == "item_gradients":
            ax.set_xscale("log")
        drawn.append({"value": panel, "lines": [{"label": l.get_label(), "points": len(l.get_xdata())} for l in ax.get_lines()]})
    axes[-1].legend(fontsize="small")
    result = save(figure, path, drawn)
    plt.close(figure)
    return result


def box_figure(plt, summary, args, panels, titles, methods, method_axes, path):
    final = f"final_{args.metric}"
    values = defaultdict(lambda: defaultdict(list))
    for row in summary:
        if row["status"] in ("complete", "diverged") and row.get(final, "") != "":
            panel = row[args.panel] if args.panel else ""
            values[panel][tuple(row[axis] for axis in method_axes)].append(float(row[final]))
    figure, axes = new_figure(plt, panels)
    drawn = []
    for ax, panel in zip(axes, panels):
        present = [method for method in methods if values[panel].get(method)]
        if present:
            ax.boxplot([values[panel][method] for method in present], labels=[label(method_axes, m) for m in present])
            ax.tick_params(axis="x", labelrotation=30, labelsize="small")
        ax.set_title(titles[panel], fontsize="medium")
        ax.set_ylabel(f"final {args.metric}")
        drawn.append({"value": panel,
                      "boxes": [{"label": label(method_axes, m), "values": len(values[panel][m])} for m in present]})
    figure.suptitle(f"across {args.seed_axis}", fontsize="medium")
    result = save(figure, path, drawn)
    plt.close(figure)
    return result


def choose_time(choice, summary):
    """("wall" or "cpu", the sentence that says why) for the seconds figure."""
    most = max((int(row["concurrent_cells"]) for row in summary if row.get("concurrent_cells")), default=1)
    ran = f"up to {most} cells ran at once on one machine" if most > 1 else "no two cells ran at once on one machine"
    if choice == "auto":
        choice = "cpu" if most > 1 else "wall"
    return choice, f"the seconds figure uses {TIME_COLUMNS[choice][1]} ({ran})"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="a sweep's output folder (results.csv, summary.csv)")
    parser.add_argument("--panel", help="the axis whose values get one panel each (default: one panel)")
    parser.add_argument("--metric", help="the metric to draw (default: the first in results.csv)")
    parser.add_argument("--time", choices=("auto", "wall", "cpu"), default="auto",
                        help="draw against wall or CPU seconds (auto: CPU when cells ran concurrently)")
    parser.add_argument("--seed-axis", default="run.seed", help="the axis box plots spread over (run.seed)")
    parser.add_argument("--out", type=Path, help="where the PNGs go (default: the sweep's folder)")
    parser.add_argument("--name", help="the files' prefix (default: the sweep folder's name)")
    args = parser.parse_args()

    header, rows = read_table(args.folder / "results.csv")
    _, summary = read_table(args.folder / "summary.csv")
    if any(column not in header for column in ("cell", "chain", "item_gradients")):
        fail(f"{args.folder / 'results.csv'}: not a sweep's results table (no cell, chain or item_gradients column; "
             "a cut file?)")
    sweep_axes = header[header.index("cell") + 1:header.index("chain")]
    metrics = header[header.index("item_gradients") + 1:]
    check_numbers(args.folder / "results.csv", rows, header[header.index("chain"):])
    if args.panel:
        check_choice("--panel axis", args.panel, sweep_axes)
    args.metric = args.metric or (metrics[0] if metrics else None)
    if not args.metric:
        fail(f"{args.folder / 'results.csv'}: no metric columns")
    check_choice("--metric", args.metric, metrics)
    if not rows:
        fail(f"{args.folder / 'results.csv'}: no finished cell to draw")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        fail(f"drawing needs matplotlib for python3 ({error}); on Debian: apt install python3-matplotlib")

    others = [axis for axis in sweep_axes if axis not in (args.panel, args.seed_axis)]
    tied_axes = [axis for axis in others if args.panel and follows(axis, args.panel, summary)]
    method_axes = [axis for axis in others if axis not in tied_axes]
    # Panels and methods in the sweep's order: summary.csv lists every cell in grid order.
    panels = list(dict.fromkeys(row[args.panel] if args.panel else "" for row in summary))
    titles = panel_titles(args.panel, tied_axes, summary)
    methods = list(dict.fromkeys(tuple(row[axis] for axis in method_axes) for row in summary))
    out = args.out or args.folder
    out.mkdir(parents=True, exist_ok=True)
    name = args.name or args.folder.resolve().name

    time, why = choose_time(args.time, summary)
    print(f"sgmcmc plot: {why}")
    figures = []
    for x_column, x_label, suffix in (TIME_COLUMNS[time] + ("seconds",), ("item_gradients", "item gradients", "gradients")):
        data = curves(rows, args.metric, x_column, args.panel, method_axes)
        figures.append(dict(x=x_column, **line_figure(plt, data, args, panels, titles, methods, method_axes, x_column, x_label,
                                                       out / f"{name}-{suffix}.png")))
    note = ""
    if args.seed_axis in sweep_axes:
        figures.append(dict(x="box", **box_figure(plt, summary, args, panels, titles, methods, method_axes, out / f"{name}-final.png")))
    else:
        note = f"no box plots: the sweep has no {args.seed_axis} axis"
        print(f"sgmcmc plot: {note}")
    sidecar = {"sweep": name, "metric": args.metric, "time": time, "time_reason": why, "panel_axis": args.panel,
               "seed_axis": args.seed_axis, "method_axes": method_axes, "tied_axes": tied_axes, "figures": figures,
               "note": note}
    (out / f"{name}-plot.json").write_text(json.dumps(sidecar, indent=1) + "\n")
    for figure in figures:
        print(out / figure["file"])


if __name__ == "__main__":
    main()

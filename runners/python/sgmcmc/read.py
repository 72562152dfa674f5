"""Reading a run folder written by `sgmcmc run`.

The folder holds (runners/README.md, "A run's folder"):

- ``chain-<k>.csv``: Stan CSV, ``#`` comment lines, then the header
  ``lp__,accept_stat__,stepsize__,<parameters>[,<quantities>]`` and one row per draw;
- ``gradients-<k>.csv``: only when ``output.gradients`` was set; the same comment lines, the
  header ``grad_lp.<parameter>,...`` and one row per row of ``chain-<k>.csv``;
- ``metrics.csv``: ``chain,iteration,seconds,cpu_seconds,item_gradients,<model metrics>``;
- ``manifest.json``: the resolved configuration, seed, versions, per-chain status and cost. It is
  written last: a folder without it is an interrupted run (one whose status is ``interrupted``
  was stopped by Ctrl-C or SIGTERM and can be resumed).

Numbers are parsed with Python's own ``float`` semantics (pandas' ``round_trip`` converter), so
every value is the double the CLI wrote, exactly.
"""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd

#: The sampler columns that precede the parameters in every ``chain-<k>.csv``.
STAT_COLUMNS = ("lp__", "accept_stat__", "stepsize__")
#: The columns an ``mh`` corrector adds after them (runners/README.md, Correctors): the block's energy
#: error ΔH̃ and whether it was accepted.
MH_STAT_COLUMNS = ("delta_energy__", "accepted__")
# The comment line of a chain file whose lp__ column holds 0 in place of a log density that was not
# computed (run.lp = false), as CmdStan's variational output does; read back as NaN.
LP_NOT_COMPUTED = "lp__ = 0: not computed"

#: The columns that precede the model's metrics in ``metrics.csv``.
METRIC_KEY_COLUMNS = ("chain", "iteration", "seconds", "cpu_seconds", "item_gradients")
GRADIENT_PREFIX = "grad_lp."

def sampler_columns(columns: list[str]) -> list[str]:
    """The sampler's columns at the start of a chain file's header ``columns``: STAT_COLUMNS, and
    MH_STAT_COLUMNS after them when present."""
    stats = list(STAT_COLUMNS)
    if tuple(columns[len(stats) : len(stats) + len(MH_STAT_COLUMNS)]) == MH_STAT_COLUMNS:
        stats += MH_STAT_COLUMNS
    return stats


_CHAIN_FILE = re.compile(r"^chain-([0-9]+)\.csv$")


class RunFolderError(ValueError):
    """A run folder, or one of its files, is missing, incomplete or malformed. The message names
    the file (and line, where there is one)."""

    def __init__(self, message: str, path: Path | str | None = None):
        super().__init__(message)
        self.path = Path(path) if path is not None else None


def read_stan_csv(path: Path | str) -> tuple[pd.DataFrame, list[str]]:
    """One Stan-style CSV file: the table (float64 columns, named by the header) and its ``#``
    comment lines (without the leading ``# ``). Raises RunFolderError naming the file when it is
    missing, has no header, or a row has another number of fields than the header."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise RunFolderError(f"{path}: no such file", path) from None
    except OSError as error:
        raise RunFolderError(f"{path}: cannot read it ({error.strerror})", path) from None
    lines = text.split("\n")
    comments: list[str] = []
    header_line = None
    rows: list[int] = []  # 1-based line numbers of the data rows, for messages
    for number, line in enumerate(lines, start=1):
        if line.startswith("#"):
            comments.append(line[1:].strip())
        elif line.strip() == "":
            continue
        elif header_line is None:
            header_line = number
        else:
            rows.append(number)
    if header_line is None:
        raise RunFolderError(f"{path}: no header line (the file is empty or holds only comments)", path)
    header = lines[header_line - 1].split(",")
    # A row with fewer fields than the header would silently become NaN in pandas: check them all.
    fields = len(header)
    for number in rows:
        if lines[number - 1].count(",") + 1 != fields:
            found = lines[number - 1].count(",") + 1
            ending = " (a truncated last line: was the run interrupted?)" if number == rows[-1] else ""
            raise RunFolderError(f"{path}:{number}: {found} fields, the header has {fields}{ending}", path)
    if len(set(header)) != len(header):
        raise RunFolderError(f"{path}:{header_line}: repeated column names in the header", path)
    if not rows:
        table = pd.DataFrame({name: np.empty(0) for name in header})
        return table, comments
    data = "\n".join(lines[number - 1] for number in [header_line, *rows])
    try:
        table = pd.read_csv(StringIO(data), dtype=np.float64, float_precision="round_trip", engine="c")
    except ValueError as error:
        raise RunFolderError(f"{path}: a value is not a number ({error})", path) from None
    return table, comments


class Run:
    """A run folder read into memory.

    Attributes
    ----------
    path : Path
        The folder.
    manifest : dict
        ``manifest.json`` as parsed JSON (``config``, ``seed``, ``model``, ``chains``, ...).
    chain_ids : list[int]
        The chain numbers k of the ``chain-<k>.csv`` files, in order (1, 2, ...).
    chains : list[pandas.DataFrame]
        One table per chain: its columns are the CSV header (``lp__``, ``accept_stat__``,
        ``stepsize__``, parameters, quantities), one row per draw.
    gradients : list[pandas.DataFrame] | None
        One table per chain of ``gradients-<k>.csv`` (columns ``grad_lp.<parameter>``), or None
        when the run recorded no gradients.
    metrics : pandas.DataFrame
        ``metrics.csv``: ``chain``, ``iteration`` (integers), ``seconds``, ``cpu_seconds``,
        ``item_gradients`` and the model's metrics.
    comments : list[list[str]]
        The ``#`` comment lines of each chain file (the resolved configuration, the version).
    """

    def __init__(self, path, manifest, chain_ids, chains, gradients, metrics, comments):
        self.path = Path(path)
        self.manifest = manifest
        self.chain_ids = chain_ids
        self.chains = chains
        self.gradients = gradients
        self.metrics = metrics
        self.comments = comments
        self.stdout = ""  # what `sgmcmc run` printed, when the run was made by sgmcmc.run

    # --- names -----------------------------------------------------------------------------
    @property
    def columns(self) -> list[str]:
        """Every column of the chain files, as in their header."""
        return list(self.chains[0].columns)

    @property
    def stat_columns(self) -> list[str]:
        """The sampler's columns before the parameters: STAT_COLUMNS, then MH_STAT_COLUMNS when an
        ``mh`` corrector ran."""
        return sampler_columns(self.columns)

    @property
    def parameter_names(self) -> list[str]:
        """The model's parameters (``beta.1``, ...): the first ``model.dimension`` columns after
        the sampler's."""
        first = len(self.stat_columns)
        return self.columns[first : first + self.manifest["model"]["dimension"]]

    @property
    def quantity_names(self) -> list[str]:
        """The model's quantities of interest (present with ``output.quantities = true``)."""
        return self.columns[len(self.stat_columns) + self.manifest["model"]["dimension"] :]

    @property
    def metric_names(self) -> list[str]:
        return [c for c in self.metrics.columns if c not in METRIC_KEY_COLUMNS]

    @property
    def config(self) -> dict:
        """The resolved configuration (every section, defaults included)."""
        return self.manifest["config"]

    @property
    def num_chains(self) -> int:
        return len(self.chains)

    @property
    def num_draws(self) -> list[int]:
        """The number of draws of each chain (a diverged chain stops early)."""
        return [len(table) for table in self.chains]

    @property
    def status(self) -> str:
        """``complete``, ``diverged`` or ``interrupted`` (stopped by Ctrl-C or SIGTERM, resumable), as the
        manifest says."""
        return self.manifest.get("status", "unknown")

    # --- arrays ----------------------------------------------------------------------------
    def _equal_lengths(self, what: str) -> int:
        lengths = self.num_draws
        if len(set(lengths)) != 1:
            detail = ", ".join(f"chain {k}: {n}" for k, n in zip(self.chain_ids, lengths))
            raise ValueError(f"{self.path}: the chains have different numbers of draws ({detail}); "
                             f"{what} needs equal lengths: use run.chains[i] per chain")
        return lengths[0]

    def draws_array(self, columns: list[str] | None = None) -> np.ndarray:
        """The draws as an array of shape (chains, draws, columns), all columns by default."""
        self._equal_lengths("draws_array")
        columns = self.columns if columns is None else list(columns)
        return np.stack([table[columns].to_numpy(dtype=np.float64) for table in self.chains])

    def gradients_array(self) -> np.ndarray:
        """The recorded gradients, shape (chains, draws, parameters); column j is
        ∂lp__/∂parameter_names[j]. Raises ValueError when the run recorded none."""
        if self.gradients is None:
            raise ValueError(f"{self.path}: the run recorded no gradients (set output.gradients)")
        self._equal_lengths("gradients_array")
        return np.stack([table.to_numpy(dtype=np.float64) for table in self.gradients])

    def draws_frame(self) -> pd.DataFrame:
        """All chains in one long table: ``chain`` and ``draw`` (1-based) then the CSV columns, as
        CmdStanPy's ``draws_pd``."""
        frames = []
        for k, table in zip(self.chain_ids, self.chains):
            frame = table.copy()
            frame.insert(0, "draw", np.arange(1, len(table) + 1))
            frame.insert(0, "chain", k)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)

    # Exports (netCDF, ArviZ groups) are functions of sgmcmc.export taking a Run: export reads
    # runs, reading does not know about exports.

    def __repr__(self) -> str:
        model = self.manifest.get("model", {}).get("name", "?")
        return (f"Run({str(self.path)!r}: model {model}, {self.num_chains} chain(s), draws {self.num_draws}, "
                f"{len(self.parameter_names)} parameter(s), status {self.status})")


def _chain_files(folder: Path) -> dict[int, Path]:
    files = {}
    for entry in folder.iterdir():
        match = _CHAIN_FILE.match(entry.name)
        if match and entry.name == f"chain-{int(match.group(1))}.csv":
            files[int(match.group(1))] = entry
    return dict(sorted(files.items()))


def read_manifest(folder: Path | str) -> dict:
    """``manifest.json`` of a run folder. Raises RunFolderError naming the file when it is
    missing (an interrupted run) or not JSON."""
    path = Path(folder) / "manifest.json"
    if not path.exists():
        hint = (" and a checkpoint.json: an interrupted run, which `sgmcmc run --resume` continues"
                if (Path(folder) / "checkpoint.json").exists() else ": an interrupted run, or not a run folder")
        raise RunFolderError(f"{path}: no such file (the CLI writes it last){hint}", path)
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise RunFolderError(f"{path}:{error.lineno}: not valid JSON ({error.msg})", path) from None


def read_metrics(path: Path | str) -> pd.DataFrame:
    """``metrics.csv``: ``chain`` and ``iteration`` as integers, the other columns as float64."""
    table, _ = read_stan_csv(path)
    missing = [c for c in METRIC_KEY_COLUMNS if c not in table.columns]
    if missing:
        raise RunFolderError(f"{path}: header lacks {', '.join(missing)}", path)
    for name in ("chain", "iteration"):
        table[name] = table[name].astype(np.int64)
    return table


def read_run(path: Path | str) -> Run:
    """Reads a complete run folder written by ``sgmcmc run``: every ``chain-<k>.csv``, the
    ``gradients-<k>.csv`` when present, ``metrics.csv`` and ``manifest.json``.

    Checks that the files agree with each other and with the manifest (chain count, columns,
    model dimension, gradient rows); any disagreement, or a missing file, raises RunFolderError
    naming the file."""
    folder = Path(path)
    if not folder.is_dir():
        raise RunFolderError(f"{folder}: no such folder", folder)
    manifest = read_manifest(folder)
    chain_paths = _chain_files(folder)
    manifest_path = folder / "manifest.json"
    expected = int(manifest.get("config", {}).get("run", {}).get("chains", len(chain_paths)))
    for k in range(1, expected + 1):
        if k not in chain_paths:
            raise RunFolderError(f"{folder / f'chain-{k}.csv'}: no such file ({manifest_path} says {expected} chain(s))",
                                 folder / f"chain-{k}.csv")
    extra = [p for k, p in chain_paths.items() if k > expected]
    if extra:
        raise RunFolderError(f"{extra[0]}: not one of the {expected} chain(s) that {manifest_path} lists", extra[0])

    chain_ids = list(chain_paths)
    chains, comments = [], []
    dimension = int(manifest.get("model", {}).get("dimension", -1))
    for k, chain_path in chain_paths.items():
        table, lines = read_stan_csv(chain_path)
        if tuple(table.columns[: len(STAT_COLUMNS)]) != STAT_COLUMNS:
            raise RunFolderError(f"{chain_path}: the header does not start with {','.join(STAT_COLUMNS)}", chain_path)
        if chains and list(table.columns) != list(chains[0].columns):
            raise RunFolderError(f"{chain_path}: other columns than {chain_paths[chain_ids[0]]}", chain_path)
        stats = len(sampler_columns(list(table.columns)))
        if dimension >= 0 and len(table.columns) < stats + dimension:
            raise RunFolderError(f"{chain_path}: {len(table.columns) - stats} parameter column(s), but "
                                 f"{manifest_path} says the model has dimension {dimension}", chain_path)
        if any(line.startswith(LP_NOT_COMPUTED) for line in lines):
            table["lp__"] = np.nan  # written as 0 for R's readers, which refuse a NaN
        chains.append(table)
        comments.append(lines)

    gradients = None
    gradient_source = manifest.get("config", {}).get("output", {}).get("gradients", "none")
    if gradient_source != "none" or any((folder / f"gradients-{k}.csv").exists() for k in chain_ids):
        gradients = []
        first = len(sampler_columns(list(chains[0].columns)))
        names = list(chains[0].columns[first : first + dimension])
        wanted = [GRADIENT_PREFIX + name for name in names]
        for k, table in zip(chain_ids, chains):
            gradient_path = folder / f"gradients-{k}.csv"
            if not gradient_path.exists():
                raise RunFolderError(f"{gradient_path}: no such file ({manifest_path} says output.gradients = "
                                     f"{gradient_source!r})", gradient_path)
            grad, _ = read_stan_csv(gradient_path)
            if list(grad.columns) != wanted:
                raise RunFolderError(f"{gradient_path}: the header is not grad_lp.<parameter> for the parameters of "
                                     f"chain-{k}.csv", gradient_path)
            if len(grad) != len(table):
                raise RunFolderError(f"{gradient_path}: {len(grad)} row(s), chain-{k}.csv has {len(table)}", gradient_path)
            gradients.append(grad)

    metrics_path = folder / "metrics.csv"
    metrics = read_metrics(metrics_path)
    unknown = sorted(set(metrics["chain"].unique()) - set(chain_ids))
    if unknown:
        raise RunFolderError(f"{metrics_path}: rows for chain(s) {unknown} that have no chain-<k>.csv", metrics_path)
    return Run(folder, manifest, chain_ids, chains, gradients, metrics, comments)

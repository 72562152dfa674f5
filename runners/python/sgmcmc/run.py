"""Running the `sgmcmc` CLI from Python, as CmdStanPy runs CmdStan: the CLI does the sampling,
Python builds its command line, waits, and reads the output folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

from .read import Run, read_run

#: The environment variable naming the CLI when no ``cli`` argument is given.
CLI_VARIABLE = "SGMCMC_CLI"


class CliError(RuntimeError):
    """The CLI exited with a non-zero code. ``returncode`` is its exit code (1: a chain diverged,
    its draws up to then are kept in ``out``; 2: bad input; 3: an internal error; 130: stopped by
    Ctrl-C or SIGTERM, resumable with ``sgmcmc run --resume out``), ``stderr`` its message,
    ``command`` the command line, ``out`` the output folder."""

    def __init__(self, command: list[str], returncode: int, stdout: str, stderr: str, out: Path | None):
        self.command = command
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.out = out
        message = stderr.strip() or stdout.strip() or "(no message)"
        super().__init__(f"sgmcmc exited with code {returncode}: {message}")


def find_cli(cli: str | os.PathLike | None = None) -> str:
    """The CLI to run: ``cli`` if given (a path, or a name looked up on PATH), else the
    ``SGMCMC_CLI`` environment variable, else ``sgmcmc`` on PATH. Raises FileNotFoundError
    saying where it looked."""
    for origin, candidate in (("the cli argument", cli), (CLI_VARIABLE, os.environ.get(CLI_VARIABLE))):
        if candidate is None or str(candidate) == "":
            continue
        candidate = str(candidate)
        found = shutil.which(candidate) if os.sep not in candidate else (
            candidate if os.path.isfile(candidate) and os.access(candidate, os.X_OK) else None)
        if found is None:
            raise FileNotFoundError(f"sgmcmc CLI {candidate!r} (from {origin}) is not an executable file")
        return found
    found = shutil.which("sgmcmc")
    if found is None:
        raise FileNotFoundError("cannot find the sgmcmc CLI: give cli=PATH, set SGMCMC_CLI, or put sgmcmc on PATH "
                                "(it is build/release/bin/sgmcmc after a build)")
    return found


def _toml_value(value: Any) -> str:
    """A Python value as the CLI's --set reads it: true/false, an integer, a real, else a string
    (quoted, so that a string such as "1" stays a string)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str):
        if '"' in value and "'" in value:
            raise ValueError(f"--set value {value!r}: a string cannot hold both kinds of quotes")
        quote = "'" if '"' in value else '"'
        return f"{quote}{value}{quote}"
    raise TypeError(f"--set value {value!r}: expected bool, int, float or str, got {type(value).__name__}")


def _assignments(settings: Mapping[str, Any] | None) -> list[str]:
    """``{"run.iterations": 500}`` or ``{"run": {"iterations": 500}}`` as ``section.key=value``."""
    out = []
    for key, value in (settings or {}).items():
        if isinstance(value, Mapping):
            out += [f"{key}.{inner}" for inner in _assignments(value)]
        else:
            out.append(f"{key}={_toml_value(value)}")
    return out


def run(preset: str | None = None, config: str | os.PathLike | None = None, *,
        set: Mapping[str, Any] | None = None, seed: int | None = None, chains: int | None = None,
        threads: int | None = None, out: str | os.PathLike | None = None, replace: bool = False,
        plugin_dir: str | os.PathLike | None = None, cli: str | os.PathLike | None = None,
        extra_args: Sequence[str] = (), timeout: float | None = None) -> Run:
    """Runs ``sgmcmc run`` on a preset (``preset="demo"``) or a TOML file (``config=path``) and
    reads its output folder.

    ``set`` overrides keys (``{"run.iterations": 500}``, ``--set`` on the command line); ``seed``,
    ``chains``, ``threads``, ``replace``, ``plugin_dir`` are the CLI's options of those names.
    ``out`` is the output folder (by default a new temporary folder, which is kept). The CLI is
    found by :func:`find_cli`. A non-zero exit raises :class:`CliError` with the CLI's stderr and
    exit code. Returns the :class:`Run` read from ``out``; ``Run.stdout`` holds what the CLI
    printed."""
    if (preset is None) == (config is None):
        raise ValueError("give exactly one of preset= and config=")
    executable = find_cli(cli)
    temporary = out is None
    if temporary:
        out = tempfile.mkdtemp(prefix=f"sgmcmc-{preset or Path(config).stem}-")
    out = Path(out)
    command = [executable, "run"]
    command += ["--preset", preset] if preset is not None else ["--config", os.fspath(config)]
    for assignment in _assignments(set):
        command += ["--set", assignment]
    if seed is not None:
        command += ["--seed", str(int(seed))]
    if chains is not None:
        command += ["--chains", str(int(chains))]
    if threads is not None:
        command += ["--threads", str(int(threads))]
    if plugin_dir is not None:
        command += ["--plugin-dir", os.fspath(plugin_dir)]
    if replace:
        command.append("--replace")
    command += ["--out", os.fspath(out), "--quiet", *extra_args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        if temporary and not any(out.iterdir()):
            out.rmdir()  # the temporary folder of a run that never started
            out = None
        raise CliError(command, result.returncode, result.stdout, result.stderr, out)
    folder = read_run(out)
    folder.stdout = result.stdout
    return folder

#!/usr/bin/env python3
"""A hostile-input sweep of the sgmcmc command line (issue 41).

Every case runs the real CLI once (or a few times: a run, then its resume) in a fresh temporary
folder, with a timeout, and is judged against what the case expects and what every command owes a
user (README.md, "Exit codes"; runners/README.md):

- the expected exit code: 0 done, 1 a chain diverged, 2 bad input, 130 interrupted;
- never killed by a signal, never a hang (the timeout), never "internal error" (exit 3) for what a
  user gave, never a Python traceback;
- exit 2 says "sgmcmc: error:" on stderr and names the file, key or plugin at fault (each case says
  which substring);
- a run folder left behind is consistent: its manifest's status matches the exit code, a complete
  chain holds iterations/thin draws, and a refused command changed none of the files already there.

Cases are generated from tables, one family each (data files, configurations, plugins, run folders,
signals, concurrency, numerics, subcommands). Cases whose outcome depends on the machine or on
timing (signals, concurrent writers) are marked; --reproducible leaves them out (what CI runs).

    hostile_sweep.py --cli build/release/bin/sgmcmc [--fixtures build/release/test-plugins]
                     [--only FAMILY] [--list] [--table] [--reproducible] [--jobs 2]

It prints one line per bad case (family, case, what was wrong, the command), then a table of
family, cases, good, and "N passed, M failed"; it exits 1 when any case is bad.
"""

import argparse
import concurrent.futures
import dataclasses
import gzip
import hashlib
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

TIMEOUT_SECONDS = 60
# The memory budget the CLI plans with (SGMCMC_MEMORY_LIMIT_MB), the same on every machine so that a
# size refused here is refused everywhere; and a hard cap on each process's data segment, so that a
# case whose size is not checked (a bad case) fails on its allocation instead of taking the machine.
MEMORY_BUDGET_MB = 2048
DATA_LIMIT_BYTES = 6 << 30
DONE, DIVERGED, BAD_INPUT, INTERRUPTED = 0, 1, 2, 130
STATUS_OF_EXIT = {DONE: "complete", DIVERGED: "diverged", INTERRUPTED: "interrupted"}
ERROR_PREFIX = re.compile(r"^sgmcmc(?: [a-z-]+)?: error:", re.MULTILINE)  # `sgmcmc plot: error:` too
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


# ---------------------------------------------------------------------------------------------
# Known bad cases: the CLI's open faults (issue 41), by (family, case) with the cause. Such a case
# still runs and is judged; it is counted "known bad" instead of failing the sweep while it is
# bad, and fails the sweep once it is good (its line must then go), so the list can only shrink.
# A case whose fault is a hang or an unbounded allocation is not run at all (HANGS).

KNOWN_BAD = {}
HANGS = {}

# ---------------------------------------------------------------------------------------------
# Cases and their outcomes


@dataclasses.dataclass
class Case:
    family: str
    name: str
    args: Sequence[str]  # the CLI's arguments; "{fixtures}" is replaced by the fixture plugins' folder
    expect: Union[int, tuple]  # the exit code(s) a correct CLI gives
    names: Union[str, tuple, None] = None  # exit 2: stderr names one of these
    setup: Optional[Callable] = None  # setup(ctx) writes files (the base files are always there)
    out: Optional[str] = "out"  # the run folder to check, relative to the case's folder
    timing: bool = False  # depends on the machine or on timing
    skip: Optional[str] = None  # why the case cannot run here
    check: Optional[Callable] = None  # check(ctx, result) -> a problem, or None
    output_has: Optional[str] = None  # stdout + stderr must contain this
    driver: Optional[Callable] = None  # driver(ctx) -> result of the command judged, for multi-step cases
    env: Optional[dict] = None
    may_be_internal: bool = False  # a plugin with a deliberate bug: exit 3 is the documented answer
    crashes_on_purpose: bool = False  # a fixture plugin that crashes: a sanitizer reports its signal


@dataclasses.dataclass
class Result:
    args: list
    code: Optional[int]  # None: timed out; negative: killed by that signal
    stdout: str
    stderr: str
    seconds: float
    note: str = ""  # what a driver found wrong beyond the command's own outcome


def noted(result: Result, note: str) -> Result:
    return dataclasses.replace(result, note=note)


class Context:
    """A case's fresh folder and the CLI, for setups, drivers and checks."""

    def __init__(self, options, folder: Path):
        self.options = options
        self.folder = folder
        self.results = []  # every command a driver or setup ran

    def path(self, name) -> Path:
        return self.folder / name

    def write(self, name, content):
        path = self.folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    def expand(self, args):
        return [a.replace("{fixtures}", str(self.options.fixtures or "")) for a in args]

    def cli(self, args, timeout=TIMEOUT_SECONDS, env=None) -> Result:
        full = [self.options.cli] + self.expand(args)
        start = time.monotonic()
        environment = dict(os.environ, **(env or {}))
        try:
            done = subprocess.run(full, cwd=self.folder, capture_output=True, timeout=timeout, env=environment,
                                  stdin=subprocess.DEVNULL)
            result = Result(full, done.returncode, done.stdout.decode(errors="replace"),
                            done.stderr.decode(errors="replace"), time.monotonic() - start)
        except subprocess.TimeoutExpired as expired:
            result = Result(full, None, (expired.stdout or b"").decode(errors="replace"),
                            (expired.stderr or b"").decode(errors="replace"), timeout)
        self.results.append(result)
        return result

    def spawn(self, args):
        """A CLI process left running (signals, concurrency); the caller waits for it."""
        return subprocess.Popen([self.options.cli] + self.expand(args), cwd=self.folder, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(process, args, start, timeout=TIMEOUT_SECONDS) -> Result:
    try:
        stdout, stderr = process.communicate(timeout=timeout)
        code = process.returncode
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        code = None
    return Result(list(args), code, stdout.decode(errors="replace"), stderr.decode(errors="replace"),
                  time.monotonic() - start)


def wait_for(predicate, seconds=20.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


# ---------------------------------------------------------------------------------------------
# Base files every case finds in its folder: small valid data sets and configurations


def csv_rows(rows=60, seed=1):
    rng = random.Random(seed)
    lines = []
    for _ in range(rows):
        x = [rng.gauss(0, 1) for _ in range(3)]
        lines.append(",".join(f"{v:.4f}" for v in [sum(x) + rng.gauss(0, 1)] + x))
    return ("\n".join(lines) + "\n").encode()


def libsvm_rows(rows=60, seed=2):
    rng = random.Random(seed)
    return "".join(f"{rng.choice(['+1', '-1'])} 1:{rng.random():.3f} 3:{rng.random():.3f}\n"
                   for _ in range(rows)).encode()


def ratings_rows(rows=60, seed=3):
    rng = random.Random(seed)
    return "".join(f"{rng.randint(1, 8)}\t{rng.randint(1, 10)}\t{rng.randint(1, 5)}\t881250949\n"
                   for _ in range(rows)).encode()


def docword_lines(seed=4):
    rng = random.Random(seed)
    pairs = set()
    while len(pairs) < 60:
        pairs.add((rng.randint(1, 10), rng.randint(1, 20)))
    return [f"{d} {w} {rng.randint(1, 4)}" for d, w in sorted(pairs)]


def docword_rows(seed=4):
    lines = docword_lines(seed)
    return ("10\n20\n%d\n" % len(lines) + "\n".join(lines) + "\n").encode()


RUN_KEYS = "[run]\niterations = 20\nwarmup = 0\neval_every = 10\n"
BASE_CONFIGS = {
    # the data file's name is the format's; a case replaces the file or points model.data elsewhere
    "csv.toml": f'[model]\nname = "gaussian"\ndata = "data.csv"\n[estimator]\nbatch_size = 10\n'
                f'[integrator]\nstep_size = 1e-3\n{RUN_KEYS}',
    "libsvm.toml": f'[model]\nname = "logistic"\ndata = "data.libsvm"\n[estimator]\nbatch_size = 10\n'
                   f'[integrator]\nstep_size = 1e-3\n{RUN_KEYS}',
    "ratings.toml": f'[model]\nname = "pmf"\ndata = "data.ratings"\nrank = 2\n[estimator]\nbatch_size = 10\n'
                    f'[integrator]\nstep_size = 1e-3\n{RUN_KEYS}',
    "docword.toml": f'[model]\nname = "lda"\ndata = "data.docword"\ntopics = 3\n[estimator]\nbatch_size = 3\n'
                    f'[integrator]\nstep_size = 1e-3\n{RUN_KEYS}',
    # simulated data, for the settings of the model itself
    "sim.toml": f'[model]\nname = "gaussian"\nn = 200\ndim = 3\n[estimator]\nbatch_size = 20\n'
                f'[integrator]\nstep_size = 1e-3\n{RUN_KEYS}',
}
BASE_DATA = {"data.csv": csv_rows, "data.libsvm": libsvm_rows, "data.ratings": ratings_rows,
             "data.docword": docword_rows}


def write_base(ctx: Context):
    for name, make in BASE_DATA.items():
        ctx.write(name, make())
    for name, text in BASE_CONFIGS.items():
        ctx.write(name, text)


# ---------------------------------------------------------------------------------------------
# Judging an outcome


def folder_digest(folder: Path):
    """Every file's bytes under a folder (but the lock file), to see that a refusal changed nothing."""
    if not folder.is_dir():
        return None
    digest = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.name != ".lock":
            digest[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


def draws_in(chain_file: Path):
    lines = [l for l in chain_file.read_text(errors="replace").splitlines() if l and not l.startswith("#")]
    return max(len(lines) - 1, 0)


def run_folder_problem(folder: Path, code):
    """A run folder whose record disagrees with the exit code, or whose draws were lost."""
    manifest_path = folder / "manifest.json"
    if not manifest_path.is_file():
        return f"exit {code} but no manifest.json in {folder.name}" if code in (DONE, DIVERGED, INTERRUPTED) else None
    try:
        manifest = json.loads(manifest_path.read_text())
    except (ValueError, UnicodeDecodeError) as error:
        return f"manifest.json is not JSON: {error}"
    status = manifest.get("status")
    if code in STATUS_OF_EXIT and status != STATUS_OF_EXIT[code]:
        return f"exit {code} but manifest status '{status}'"
    if status == "complete":
        run = manifest.get("config", {}).get("run", {})
        expected = run.get("iterations", 0) // max(run.get("thin", 1), 1)
        draws_written = manifest.get("config", {}).get("output", {}).get("draws", True)
        for chain in manifest.get("chains", []):
            path = folder / f"chain-{chain.get('chain')}.csv"
            if not path.is_file():
                return f"complete run without {path.name}"
            if draws_written and draws_in(path) != expected:
                return f"complete run, {path.name} holds {draws_in(path)} draws, expected {expected}"
    return None


def judge(case: Case, ctx: Context, result: Result, before) -> list:
    problems = []
    text = result.stdout + result.stderr
    expected = case.expect if isinstance(case.expect, tuple) else (case.expect,)
    if result.code is None:
        return [f"hang: no exit within {TIMEOUT_SECONDS} s"]
    if result.note:
        problems.append(result.note)
    if result.code < 0 and result.code not in expected:
        problems.append(f"killed by signal {-result.code} ({signal.Signals(-result.code).name})")
    elif result.code not in expected:
        problems.append(f"exit {result.code}, expected {' or '.join(map(str, expected))}")
    if "Traceback (most recent call last)" in text:
        problems.append("a Python traceback")
    # Under a sanitized build: ASan exits 1 (a diverged chain's code) and UBSan goes on by default.
    sanitizer = next((s for s in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:") if s in text), None)
    if sanitizer and not case.crashes_on_purpose:
        problems.append(f"a sanitizer report ('{sanitizer}')")
    if "internal error" in text and not case.may_be_internal:
        problems.append("'internal error' for user input")
    if result.code == BAD_INPUT:
        if not ERROR_PREFIX.search(result.stderr):
            problems.append("exit 2 without 'sgmcmc: error:' on stderr")
        names = case.names if isinstance(case.names, tuple) else ((case.names,) if case.names else ())
        names = tuple(n for n in names if n)  # an empty name would match any message
        if names and not any(names_in(n, text) for n in names):
            problems.append(f"the message names none of {names}")
    if case.output_has and case.output_has not in text:
        problems.append(f"the output lacks '{case.output_has}'")
    if case.out and result.code is not None and result.code >= 0:
        folder = ctx.path(case.out)
        if result.code == BAD_INPUT and before is not None:
            if folder_digest(folder) != before:
                problems.append(f"a refused command changed files in {case.out}")
        elif result.code in STATUS_OF_EXIT and not folder.is_dir():
            problems.append(f"exit {result.code} but no run folder {case.out}")
        elif folder.is_dir() and (problem := run_folder_problem(folder, result.code)):
            problems.append(problem)
    if case.check and not problems:
        try:
            problem = case.check(ctx, result)
        except Exception as error:  # a check that cannot read what the CLI left is a finding too
            problem = f"check failed: {type(error).__name__}: {error}"
        if problem:
            problems.append(problem)
    return problems


def names_in(name, text):
    """`name` stands in the text as a whole name: 'out' in "'out' holds ..." or "out/x", not in "without"."""
    return re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", text) is not None


def run_case(case: Case, options) -> tuple:
    with tempfile.TemporaryDirectory(prefix="hostile-") as temporary:
        ctx = Context(options, Path(temporary))
        try:
            write_base(ctx)
            if case.setup:
                case.setup(ctx)
            before = folder_digest(ctx.path(case.out)) if case.out else None
            if case.driver:
                result = case.driver(ctx)
            else:
                result = ctx.cli(list(case.args), env=case.env)
            problems = judge(case, ctx, result, before)
        except Exception as error:
            result = Result(list(case.args), None, "", "", 0)
            problems = [f"the sweep's setup failed: {type(error).__name__}: {error}"]
        finally:
            make_removable(Path(temporary))
    return problems, result


def make_removable(folder: Path):
    for path in folder.rglob("*"):
        try:
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------
# Helpers for the tables


def toml_string(text):
    return json.dumps(text, ensure_ascii=False)


def run_args(config, *sets, out="out"):
    args = ["run", "--config", config, "--quiet", "--out", out]
    for s in sets:
        args += ["--set", s]
    return args


def writes(paths=None, **files):
    """A setup writing files: `paths` maps paths to contents; a keyword's "__" stands for "."."""
    every = dict(paths or {}, **{name.replace("__", "."): content for name, content in files.items()})

    def setup(ctx):
        for name, content in every.items():
            ctx.write(name, content)
    return setup


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def fifo_writer(name, content: bytes):
    """A setup making `name` a FIFO fed by a thread (it gives up when no reader comes)."""
    def setup(ctx):
        path = ctx.path(name)
        os.mkfifo(path)

        def feed():
            try:
                fd = os.open(path, os.O_WRONLY)
                os.write(fd, content)
                os.close(fd)
            except OSError:
                pass
        threading.Thread(target=feed, daemon=True).start()
    return setup


def then(*setups):
    def setup(ctx):
        for s in setups:
            if s:
                s(ctx)
    return setup


# ---------------------------------------------------------------------------------------------
# Family: data files


FORMATS = {
    # format: (configuration, data file, valid bytes)
    "csv": ("csv.toml", "data.csv", csv_rows),
    "libsvm": ("libsvm.toml", "data.libsvm", libsvm_rows),
    "ratings": ("ratings.toml", "data.ratings", ratings_rows),
    "docword": ("docword.toml", "data.docword", docword_rows),
}


def flip_middle(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes(b ^ 0x5A for b in data[middle:middle + 16]) + data[middle + 16:]


# Content variants for every format: (name, make(valid bytes) -> bytes, suffix, expected, names the file?)
CONTENT_VARIANTS = [
    ("empty file", lambda v: b"", "", BAD_INPUT),
    ("blank lines only", lambda v: b"\n\n\n", "", BAD_INPUT),
    ("spaces only", lambda v: b"   \n \t \n", "", BAD_INPUT),
    ("NUL byte inside", lambda v: v[:40] + b"\0" + v[40:], "", BAD_INPUT),
    ("binary junk", lambda v: random.Random(7).randbytes(4096), "", BAD_INPUT),
    ("byte-order mark", lambda v: b"\xef\xbb\xbf" + v, "", DONE),
    ("CRLF line ends", lambda v: v.replace(b"\n", b"\r\n"), "", DONE),
    ("no final newline", lambda v: v.rstrip(b"\n"), "", DONE),
    ("gzip", lambda v: gz(v), ".gz", DONE),
    ("gzip cut in half", lambda v: gz(v)[: len(gz(v)) // 2], ".gz", BAD_INPUT),
    ("gzip cut to its header", lambda v: gz(v)[:10], ".gz", BAD_INPUT),
    ("gzip corrupt in the middle", lambda v: flip_middle(gz(v)), ".gz", BAD_INPUT),
    ("gzip with its CRC damaged", lambda v: gz(v)[:-8] + bytes(b ^ 0xFF for b in gz(v)[-8:-4]) + gz(v)[-4:], ".gz", BAD_INPUT),
    ("gzip then plain rows appended", lambda v: gz(v) + v.splitlines(True)[-1], ".gz", BAD_INPUT),
    ("gzip of nothing", lambda v: gz(b""), ".gz", BAD_INPUT),
    ("gzip of binary junk", lambda v: gz(random.Random(8).randbytes(4096)), ".gz", BAD_INPUT),
    ("invalid UTF-8 line", lambda v: v + b"\xff\xfe\xfd\n", "", BAD_INPUT),
    ("a 5 MB line", lambda v: v + b"7" * 5_000_000 + b"\n", "", BAD_INPUT),
]


def two_member_gzip_check(rows):
    def check(ctx, result):
        return None if f"{rows} rows" in result.stderr or rows is None else f"expected '{rows} rows' read"
    return check


def data_content_cases():
    cases = []
    for fmt, (config, data, valid) in FORMATS.items():
        for label, make, suffix, expect in CONTENT_VARIANTS:
            name = "input" + suffix
            cases.append(Case("data", f"{fmt}: {label}", run_args(config, f"model.data={toml_string(name)}"), expect,
                              names=name, setup=writes({name: make(valid())})))
        # two gzip members in one file are one valid gzip file: every row is read
        cases.append(Case("data", f"{fmt}: two gzip members", run_args(config, 'model.data="input.gz"'), DONE,
                          setup=writes(input__gz=gz(valid()[:0]) + gz(valid())) if fmt == "docword" else
                          writes(input__gz=gz(b"".join(valid().splitlines(True)[:30])) +
                                 gz(b"".join(valid().splitlines(True)[30:]))),
                          check=None if fmt == "docword" else two_member_gzip_check(60)))
    return cases


# Names given as model.data: (label, value or None, setup, expected, names)
def data_name_cases():
    cases = []
    long_component = "d" * 300
    deep = "/".join(["p" * 200] * 6)
    for fmt, (config, data, valid) in FORMATS.items():
        variants = [
            ("missing file", "no-such-file.dat", None, BAD_INPUT, "no-such-file.dat"),
            ("a folder", "folder", lambda c: c.path("folder").mkdir(), BAD_INPUT, "folder"),
            ("/dev/null", "/dev/null", None, BAD_INPUT, "/dev/null"),
            ("/dev/zero", "/dev/zero", None, BAD_INPUT, "/dev/zero"),
            ("/dev/urandom", "/dev/urandom", None, BAD_INPUT, "/dev/urandom"),
            ("a FIFO fed once", "fifo", fifo_writer("fifo", valid()), DONE, None),
            ("a 300-character name", long_component, None, BAD_INPUT, long_component),
            ("a 1,200-character valid path", deep + "/data",
             lambda c, v=valid(): c.write(deep + "/data", v), DONE, None),
            ("a unicode name", "données-ü-数据.txt", lambda c, v=valid(): c.write("données-ü-数据.txt", v), DONE, None),
            ("spaces and quotes in the name", "a b 'c' \"d\".txt",
             lambda c, v=valid(): c.write("a b 'c' \"d\".txt", v), DONE, None),
            ("an empty name", "", None, BAD_INPUT, "model.data"),
            ("a NUL in the name", "input\u0000.txt", None, BAD_INPUT, "model.data"),
            ("a symlink to the data", "link", lambda c, d=data: os.symlink(d, c.path("link")), DONE, None),
            ("a dangling symlink", "dangling", lambda c: os.symlink("nowhere", c.path("dangling")), BAD_INPUT, "dangling"),
            ("a symlink loop", "loop", lambda c: os.symlink("loop", c.path("loop")), BAD_INPUT, "loop"),
            ("a name under a file", data + "/x", None, BAD_INPUT, data),
        ]
        for label, value, setup, expect, names in variants:
            cases.append(Case("data", f"{fmt}: {label}", run_args(config, f"model.data={toml_string(value)}"), expect,
                              names=names, setup=setup))
        cases.append(Case("data", f"{fmt}: unreadable file (chmod 000)", run_args(config), BAD_INPUT, names=data,
                          setup=lambda c, d=data: c.path(d).chmod(0),
                          skip="runs as root: a file with mode 000 is still readable" if IS_ROOT else None))
        cases.append(Case("data", f"{fmt}: test_data missing", run_args(config, 'model.test_data="nope.txt"'),
                          BAD_INPUT, names="nope.txt"))
    return cases


def replace_line(valid: bytes, index, line: bytes) -> bytes:
    lines = valid.splitlines()
    lines[index] = line
    return b"\n".join(lines) + b"\n"


def with_line(valid: bytes, line: bytes, index=5) -> bytes:
    lines = valid.splitlines()
    lines.insert(index, line)
    return b"\n".join(lines) + b"\n"


def docword(header, lines):
    return ("\n".join(map(str, header)) + "\n" + "".join(l + "\n" for l in lines)).encode()


FORMAT_VARIANTS = {
    "csv": [
        ("header only", lambda v: b"y,x1,x2,x3\n", BAD_INPUT),
        ("a header then rows", lambda v: b"y,x1,x2,x3\n" + v, DONE),
        ("a ragged row", lambda v: with_line(v, b"1,2,3"), BAD_INPUT),
        ("a long row", lambda v: with_line(v, b"1,2,3,4,5"), BAD_INPUT),
        ("text in a row", lambda v: with_line(v, b"1,abc,2,3"), BAD_INPUT),
        ("a row of commas", lambda v: with_line(v, b",,,"), BAD_INPUT),
        ("an empty line in the middle", lambda v: with_line(v, b""), (DONE, BAD_INPUT)),
        ("nan", lambda v: with_line(v, b"1,nan,2,3"), BAD_INPUT),
        ("NaN response", lambda v: with_line(v, b"NaN,1,2,3"), BAD_INPUT),
        ("inf", lambda v: with_line(v, b"1,inf,2,3"), BAD_INPUT),
        ("-Infinity", lambda v: with_line(v, b"1,-Infinity,2,3"), BAD_INPUT),
        ("1e400", lambda v: with_line(v, b"1,1e400,2,3"), BAD_INPUT),
        ("-1e400", lambda v: with_line(v, b"-1e400,1,2,3"), BAD_INPUT),
        ("1e300 (finite, overflows a product)", lambda v: with_line(v, b"1,1e300,2,3"), (DIVERGED, BAD_INPUT)),
        ("a 400-digit number", lambda v: with_line(v, b"1," + b"9" * 400 + b",2,3"), BAD_INPUT),
        ("one column only", lambda v: b"\n".join(l.split(b",")[0] for l in v.splitlines()) + b"\n", BAD_INPUT),
        ("a first line mixing numbers and text", lambda v: b"1,a,2,3\n" + v, BAD_INPUT),
        ("semicolons", lambda v: v.replace(b",", b";"), BAD_INPUT),
    ],
    "libsvm": [
        ("a value that is not a number", lambda v: with_line(v, b"+1 1:0.5 3:x"), BAD_INPUT),
        ("index 0", lambda v: with_line(v, b"+1 0:1"), BAD_INPUT),
        ("decreasing indices", lambda v: with_line(v, b"+1 3:1 1:1"), BAD_INPUT),
        ("a repeated index", lambda v: with_line(v, b"+1 1:1 1:2"), BAD_INPUT),
        ("a negative index", lambda v: with_line(v, b"+1 -3:1"), BAD_INPUT),
        ("index 4e9", lambda v: with_line(v, b"+1 4000000000:1"), BAD_INPUT),
        ("index beyond 64 bits", lambda v: with_line(v, b"+1 99999999999999999999999:1"), BAD_INPUT),
        ("label 7", lambda v: with_line(v, b"7 1:1"), BAD_INPUT),
        ("label nan", lambda v: with_line(v, b"nan 1:1"), BAD_INPUT),
        ("a pair without a value", lambda v: with_line(v, b"+1 3:"), BAD_INPUT),
        ("a pair without an index", lambda v: with_line(v, b"+1 :3"), BAD_INPUT),
        ("value nan", lambda v: with_line(v, b"+1 1:nan"), BAD_INPUT),
        ("value inf", lambda v: with_line(v, b"+1 1:inf"), BAD_INPUT),
        ("value 1e400", lambda v: with_line(v, b"+1 1:1e400"), BAD_INPUT),
        ("a first row with no features", lambda v: b"+1\n" + v, BAD_INPUT),
        ("an index beyond model.features", lambda v: v, BAD_INPUT),
    ],
    "ratings": [
        ("a header line", lambda v: b"user\titem\trating\ttime\n" + v, DONE),
        ("comma separated", lambda v: v.replace(b"\t", b","), DONE),
        ("semicolon separated", lambda v: v.replace(b"\t", b";"), DONE),
        ("a short row", lambda v: with_line(v, b"1\t2"), BAD_INPUT),
        ("a negative id", lambda v: with_line(v, b"-1\t2\t3\t0"), BAD_INPUT),
        ("a fractional id", lambda v: with_line(v, b"1.5\t2\t3\t0"), BAD_INPUT),
        ("an id beyond 64 bits", lambda v: with_line(v, b"99999999999999999999999\t2\t3\t0"), BAD_INPUT),
        ("rating 9 (above rating_max)", lambda v: with_line(v, b"1\t2\t9\t0"), BAD_INPUT),
        ("rating 0 (below rating_min)", lambda v: with_line(v, b"1\t2\t0\t0"), BAD_INPUT),
        ("rating nan", lambda v: with_line(v, b"1\t2\tnan\t0"), BAD_INPUT),
        ("rating inf", lambda v: with_line(v, b"1\t2\tinf\t0"), BAD_INPUT),
        ("rating text", lambda v: with_line(v, b"1\t2\tgood\t0"), BAD_INPUT),
        ("an empty line in the middle", lambda v: with_line(v, b""), BAD_INPUT),
        ("header only", lambda v: b"user\titem\trating\n", BAD_INPUT),
    ],
    "docword": [
        ("header only", lambda v: b"10\n20\n60\n", BAD_INPUT),
        ("two header lines", lambda v: b"10\n20\n", BAD_INPUT),
        ("D = 0", lambda v: docword([0, 20, 60], docword_lines()), BAD_INPUT),
        ("W = -1", lambda v: docword([10, -1, 60], docword_lines()), BAD_INPUT),
        ("a header that is not a number", lambda v: docword(["ten", 20, 60], docword_lines()), BAD_INPUT),
        ("NNZ one more than the lines", lambda v: docword([10, 20, 61], docword_lines()), BAD_INPUT),
        ("NNZ one fewer than the lines", lambda v: docword([10, 20, 59], docword_lines()), BAD_INPUT),
        ("a word id beyond W", lambda v: docword([10, 20, 60], docword_lines()[:-1] + ["10 21 1"]), BAD_INPUT),
        ("a document id 0", lambda v: docword([10, 20, 60], ["0 1 1"] + docword_lines()[1:]), BAD_INPUT),
        ("a count 0", lambda v: docword([10, 20, 60], docword_lines()[:-1] + ["10 20 0"]), BAD_INPUT),
        ("a negative count", lambda v: docword([10, 20, 60], docword_lines()[:-1] + ["10 20 -2"]), BAD_INPUT),
        ("four fields", lambda v: docword([10, 20, 60], docword_lines()[:-1] + ["10 20 1 1"]), BAD_INPUT),
        ("W = 2^33", lambda v: docword([10, 2**33, 60], docword_lines()), BAD_INPUT),
        # documents without words are left out with a note: a huge D costs nothing
        ("D = 10^15", lambda v: docword([10**15, 20, 60], docword_lines()), (DONE, BAD_INPUT)),
        ("a count of 10^15 tokens", lambda v: docword([10, 20, 60], docword_lines()[:-1] + ["10 20 1000000000000000"]),
         BAD_INPUT),
    ],
}


def data_format_cases():
    cases = []
    for fmt, variants in FORMAT_VARIANTS.items():
        config, data, valid = FORMATS[fmt]
        for label, make, expect in variants:
            sets = ["model.features=1"] if label == "an index beyond model.features" else []
            cases.append(Case("data", f"{fmt}: {label}", run_args(config, *sets), expect,
                              names=(data, "model.features") if sets else data,
                              setup=writes({data: make(valid())})))
    # a LIBSVM file whose first row has no features reads with model.format = "libsvm"
    cases.append(Case("data", "libsvm: a first row with no features, format = libsvm",
                      run_args("libsvm.toml", 'model.format="libsvm"'), DONE,
                      setup=writes(data__libsvm=b"+1\n" + libsvm_rows())))
    return cases


# ---------------------------------------------------------------------------------------------
# Family: configurations


TOML_SYNTAX = [
    ("an unclosed table header", "[model\nname = 'gaussian'\n"),
    ("a key without a value", "[model]\nname =\n"),
    ("a key given twice", "[model]\nname = 'gaussian'\nname = 'gaussian'\n"),
    ("a table given twice", "[model]\nname = 'gaussian'\n[model]\nn = 3\n"),
    ("an unterminated string", "[model]\nname = \"gaussian\n"),
    ("text after a value", "[model]\nname = 'gaussian' junk\n"),
    ("a bad escape", "[model]\nname = \"gau\\qssian\"\n"),
    ("a value without a key", "[model]\n= 3\n"),
    ("a malformed number", "[model]\nname = 'gaussian'\n[run]\niterations = 0x\n"),
    ("double underscores in a number", "[model]\nname = 'gaussian'\n[run]\niterations = 1__0\n"),
    ("an integer beyond 64 bits", "[model]\nname = 'gaussian'\n[run]\niterations = 99999999999999999999999\n"),
    ("an array of tables", "[[model]]\nname = 'gaussian'\n"),
    ("invalid UTF-8", b"[model]\nname = '\xff\xfe'\n"),
    ("a NUL byte", b"[model]\nname = 'gaussian'\0\n"),
    ("arrays nested 100,000 deep", "[model]\nname = 'gaussian'\n[integrator]\nmass = " + "[" * 100000 + "\n"),
    ("inline tables nested 100,000 deep", "x = " + "{a = " * 100000 + "\n"),
    ("binary junk", random.Random(9).randbytes(2048)),
]

CONFIG_FILE_VARIANTS = [
    # (label, file content or None, argument given to --config, setup, expected, names)
    ("empty file", "", "c.toml", None, BAD_INPUT, "[model] needs a name"),
    ("comments only", "# nothing\n", "c.toml", None, BAD_INPUT, "[model] needs a name"),
    ("no model section", RUN_KEYS, "c.toml", None, BAD_INPUT, "[model] needs a name"),
    ("byte-order mark", b"\xef\xbb\xbf" + BASE_CONFIGS["sim.toml"].encode(), "c.toml", None, DONE, None),
    ("CRLF line ends", BASE_CONFIGS["sim.toml"].replace("\n", "\r\n"), "c.toml", None, DONE, None),
    ("missing file", None, "nope.toml", None, BAD_INPUT, "nope.toml"),
    ("a folder", None, "folder", lambda c: c.path("folder").mkdir(), BAD_INPUT, "folder"),
    ("/dev/null", None, "/dev/null", None, BAD_INPUT, "/dev/null"),
    ("/dev/zero", None, "/dev/zero", None, BAD_INPUT, "/dev/zero"),
    ("a FIFO fed once", None, "fifo.toml", fifo_writer("fifo.toml", BASE_CONFIGS["sim.toml"].encode()), DONE, None),
    ("70 MB of comments", None, "big.toml",
     lambda c: c.write("big.toml", BASE_CONFIGS["sim.toml"] + ("#" + "x" * 1023 + "\n") * 70_000), BAD_INPUT, "big.toml"),
    ("a gzip file", gz(BASE_CONFIGS["sim.toml"].encode()), "c.toml", None, BAD_INPUT, "c.toml"),
    ("a 300-character name", None, "c" * 300 + ".toml", None, BAD_INPUT, "c" * 300 + ".toml"),
    ("the model's data missing beside it", '[model]\nname = "gaussian"\ndata = "sub/none.csv"\n', "c.toml", None,
     BAD_INPUT, "none.csv"),
]

# (key, [bad values]) for the simulated gaussian configuration; each must be refused naming the key
SIM_KEY_VALUES = {
    "run.iterations": ["-1", "1.5", '"20"', "true", "nan", "[20]"],
    "run.warmup": ["-1", "2.5", '"x"'],
    "run.thin": ["0", "-1", "1.5"],
    "run.chains": ["0", "-1", "100000000", '"two"'],
    "run.seed": ["1.5", '"a"', "-1"],
    "run.data_seed": ["1.5", "-1"],
    "run.eval_every": ["0", "-1"],
    "run.checkpoint_every": ["-1", "3.5"],  # 0 is off
    "run.divergence_threshold": ["-1", "nan", '"x"', "-inf"],
    "run.init_draw": ["-1", "1.5"],
    "run.lp": ['"yes"', "1"],
    "run.temperatures": ["2"],
    "run.init_mean": ['"x"'],
    "run.init": ["3", '"missing-run"'],
    "integrator.step_size": ["0", "-1", "nan", "inf", "-inf", '"big"', "[1.0, 2.0]"],
    "integrator.temperature": ["0", "-1", "nan", "inf"],
    "integrator.mass": ["0", "-1", "nan", "inf", '"heavy"', "[1.0, 2.0]", "[1.0, -1.0, 1.0]", "[1.0, nan, 1.0]"],
    "integrator.metric": ['"full"', "1"],
    "integrator.schedule": ['"nope"'],
    "integrator.name": ['"nope"', "3", '""'],
    "integrator.scale_step_with_n": ['"x"'],
    "integrator.adapt_mass": ["3"],
    "integrator.cycle_length": ["0", "-1"],
    "integrator.decay_b": ["-1", "nan"],
    "integrator.adapt_window": ["-1"],
    "estimator.batch_size": ["0", "-1", "100000", "1.5", '"x"'],
    "estimator.name": ['"nope"', "1"],
    "estimator.replacement": ['"x"'],
    "corrector.name": ['"nope"'],
    "model.n": ["0", "-1", "1.5", "1000000000000000"],
    "model.dim": ["0", "-1", "100000000000"],
    "model.noise_sd": ["0", "-1", "nan", "inf"],
    "model.prior_sd": ["0", "-1", "inf"],
    "model.test_size": ["-0.1", "1.5", "nan", "200", "-3", "1.0"],
    "model.simulate_from_prior": ['"x"'],
    "model.name": ['"nope"', "3", '""'],
    "output.parameters": ['["nope"]', "3", '"beta.1"'],
    "output.draws": ['"x"'],
    "output.gradients": ['"nope"'],
    "output.quantities": ["3"],
    "output.zv": ["3"],
}

# Keys that a component reads only when it is chosen: (sets choosing it, key, [bad values])
COMPONENT_KEY_VALUES = [
    (["integrator.schedule=\"polynomial\""], "integrator.decay_c", ["0", "1.5", "-1"]),
    (["integrator.schedule=\"cyclical\""], "integrator.cycle_length", ["0"]),
    (["integrator.name=\"obabo\""], "integrator.friction", ["-1", "nan", "inf"]),
    (["integrator.name=\"sghmc\""], "integrator.friction", ["-1"]),
    (["integrator.name=\"hmc\"", "corrector.name=\"mh\"", "estimator.name=\"exact\""], "integrator.steps", ["0", "-1", "1.5"]),
    (["integrator.name=\"psgld\""], "integrator.alpha", ["1.5", "-0.1", "nan"]),
    (["integrator.name=\"psgld\""], "integrator.lambda", ["-1", "nan"]),
    (["integrator.name=\"sgnht\""], "integrator.diffusion", ["-1", "nan"]),
    (["integrator.name=\"badodab\""], "integrator.thermostat_start", ["nan"]),
    (["integrator.name=\"mala\"", "corrector.name=\"mh\"", "estimator.name=\"exact\"", "integrator.adapt_step_size=true",
      "run.warmup=20"], "integrator.target_acceptance", ["0", "1", "1.5", "nan"]),
    (["integrator.name=\"mala\"", "corrector.name=\"mh\"", "estimator.name=\"exact\""], "corrector.every", ["0", "-1"]),
    (["integrator.name=\"mala\"", "corrector.name=\"mh\"", "estimator.name=\"exact\""], "corrector.exact_endpoints", ['"x"']),
    (["estimator.name=\"cv\""], "estimator.sgd_iterations", ["-1", "1.5"]),
    (["estimator.name=\"cv\""], "estimator.sgd_step_size", ["-1", "nan"]),
    (["estimator.name=\"cv\""], "estimator.sampling", ['"nope"']),
    (["estimator.name=\"cv\""], "estimator.centre", ['"1, 2"', '"a, b, c"', '"1, nan, 2"']),
    (["estimator.name=\"cv\""], "estimator.centring", ['"nope"']),
    (["estimator.name=\"cv\""], "estimator.centre_passes", ["0"]),
    (["estimator.name=\"svrg\""], "estimator.period", ["0", "-1"]),
    (["estimator.name=\"saga\""], "estimator.memory_limit_mb", ["0", "-1"]),
]

# Model keys of the other models, on their data configurations
MODEL_KEY_VALUES = [
    ("libsvm.toml", "model.prior_scale", ["0", "-1", "nan"]),
    ("libsvm.toml", "model.subsample", ["0", "-0.5", "1.5"]),
    ("libsvm.toml", "model.format", ['"xml"']),
    ("libsvm.toml", "model.labels", ['"a/b"']),
    ("libsvm.toml", "model.storage", ['"half"']),
    ("libsvm.toml", "model.prefetch", ["-1"]),
    ("libsvm.toml", "model.test_size", ["1.5", "60"]),
    ("ratings.toml", "model.rank", ["0", "-1"]),
    ("ratings.toml", "model.rating_min", ["6"]),
    ("ratings.toml", "model.gibbs_every", ["-1"]),
    ("ratings.toml", "model.noise_precision", ["0", "-1"]),
    ("ratings.toml", "model.init_sd", ["-1"]),
    ("ratings.toml", "model.max_users", ["0", "-1"]),
    ("docword.toml", "model.topics", ["0", "-1"]),
    ("docword.toml", "model.alpha", ["0", "-1"]),
    ("docword.toml", "model.beta", ["0", "-1"]),
    ("docword.toml", "model.gibbs_sweeps", ["0"]),
    ("docword.toml", "model.gibbs_burnin", ["-1", "10"]),
    ("docword.toml", "model.vocabulary_size", ["0"]),
    ("docword.toml", "model.test_docs", ["-1", "1.5", "10"]),
    ("docword.toml", "model.max_docs", ["0"]),
]

SIMULATED_MODEL_KEY_VALUES = [
    ("lda", "model.docs", ["0", "1000000000000"]),
    ("lda", "model.words", ["0", "1000000000000"]),
    ("lda", "model.doc_length", ["0", "1000000000000"]),
    ("pmf", "model.users", ["0"]),
    ("pmf", "model.ratings", ["0", "-1", "1000000000000000"]),
    ("glm", "model.family", ['"nope"']),
    ("glm", "model.link", ['"nope"']),
    ("glm", "model.prior", ['"nope"']),
    ("glm", "model.prior_scale", ["0"]),
    ("glm", "model.features", ["-1", "100000000000"]),
]

MALFORMED_SETS = [
    ("no '='", "runiterations", "runiterations"),
    ("nothing before '='", "=3", "=3"),
    ("no value", "run.iterations=", "run.iterations"),
    ("no section", "iterations=3", "iterations"),
    ("an empty key", "run.=3", "run."),
    ("an empty section", ".iterations=3", ".iterations"),
    ("two values", "run.iterations=1 2", "run.iterations"),
    ("an unclosed array", "integrator.mass=[1,", "integrator.mass"),
    ("a second '='", "run.iterations=20=3", "run.iterations"),
    ("an unknown section", "nosection.key=1", "nosection"),
    ("an unknown key", "run.iteration=20", "run.iteration"),
    ("a misspelt model key", "model.noise_sigma=2", "model.noise_sigma"),
    ("three levels", "run.a.b=1", "run.a.b"),
    
    ("a table value", "run={iterations=3}", "run"),
]


def config_cases():
    cases = []
    for label, text in TOML_SYNTAX:
        cases.append(Case("config", f"TOML: {label}", ["run", "--config", "c.toml", "--quiet", "--out", "out"], BAD_INPUT,
                          names="c.toml", setup=writes(c__toml=text)))
    for label, content, argument, setup, expect, names in CONFIG_FILE_VARIANTS:
        setups = [setup] + ([writes(c__toml=content)] if content is not None else [])
        cases.append(Case("config", f"file: {label}", ["run", "--config", argument, "--quiet", "--out", "out"], expect,
                          names=names, setup=then(*setups)))
    for key, values in SIM_KEY_VALUES.items():
        for value in values:
            cases.append(Case("config", f"{key} = {value}", run_args("sim.toml", f"{key}={value}"), BAD_INPUT,
                              names=(key, value.strip('"'), "[model] needs a name") if key in ("model.name", "integrator.name", "estimator.name",
                                                                        "corrector.name", "output.parameters", "run.init")
                              else key))
    for sets, key, values in COMPONENT_KEY_VALUES:
        component = sets[0].split("=")[1].strip('"')
        for value in values:
            cases.append(Case("config", f"{component}: {key} = {value}", run_args("sim.toml", *sets, f"{key}={value}"),
                              BAD_INPUT, names=key))
    for config, key, values in MODEL_KEY_VALUES:
        for value in values:
            cases.append(Case("config", f"{config[:-5]}: {key} = {value}", run_args(config, f"{key}={value}"), BAD_INPUT,
                              names=key))
    # a size too large for memory names the key, or the count with its name (K = ... topics)
    cases.append(Case("config", "docword: model.topics = 1000000000", run_args("docword.toml", "model.topics=1000000000"),
                      BAD_INPUT, names=("model.topics", "topics")))
    for model, key, values in SIMULATED_MODEL_KEY_VALUES:
        for value in values:
            cases.append(Case("config", f"{model} simulated: {key} = {value}",
                              run_args("sim.toml", f'model.name="{model}"', "model.n=200", f"{key}={value}")
                              if model == "glm" else
                              ["run", "--config", f"{model}-sim.toml", "--quiet", "--out", "out", "--set", f"{key}={value}"],
                              BAD_INPUT, names=key, setup=writes({f"{model}-sim.toml": SIMULATED_CONFIGS.get(model, "")})))
    for label, argument, names in MALFORMED_SETS:
        cases.append(Case("config", f"--set: {label}", ["run", "--config", "sim.toml", "--quiet", "--out", "out",
                                                         "--set", argument], BAD_INPUT, names=names))
    # a value that is not TOML is read as a bare string (runners/README.md quotes them, but need not)
    cases.append(Case("config", "--set: an unquoted string", run_args("sim.toml", "model.name=gaussian"), DONE))
    cases.append(Case("config", "--set: an unquoted file name", run_args("csv.toml", "model.data=data.csv"), DONE))
    # a TOML string's escapes mean on the command line what they mean in a file
    for label, toml_text, name in [("an escaped quote", r'"q \"d\".csv"', 'q "d".csv'),
                                   ("an escaped backslash", r'"back\\slash.csv"', "back\\slash.csv"),
                                   ("a \\u escape", r'"caf\u00e9.csv"', "café.csv")]:
        cases.append(Case("config", f"--set: a file name with {label}", run_args("csv.toml", f"model.data={toml_text}"),
                          DONE, setup=lambda c, n=name: c.write(n, csv_rows())))
        cases.append(Case("config", f"file: a file name with {label}", ["run", "--config", "c.toml", "--quiet", "--out", "out"],
                          DONE, setup=lambda c, n=name, t=toml_text: (c.write(n, csv_rows()), c.write(
                              "c.toml", BASE_CONFIGS["csv.toml"].replace('"data.csv"', t)))))
    # every way TOML writes a valid value is read as that value, on the command line and in a file
    for label, assignment in [("an integer array for a float array", "integrator.mass=[1, 2, 3]"),
                              ("a plus sign", "run.iterations=+20"), ("a hexadecimal integer", "run.seed=0x10"),
                              ("underscores in an integer", "run.iterations=2_0"), ("an exponent", "integrator.step_size=1E-3"),
                              ("an integer for a float", "integrator.temperature=1")]:
        cases.append(Case("config", f"--set: {label}", run_args("sim.toml", assignment), DONE))
    for label, assignment, key in [("a float for an integer", "run.iterations=2e1", "run.iterations"),
                                   ("a date for an integer", "run.iterations=1979-05-27", "run.iterations"),
                                   ("a table for a number", "integrator.step_size={a=1}", "integrator.step_size")]:
        cases.append(Case("config", f"--set: {label}", run_args("sim.toml", assignment), BAD_INPUT, names=key))
    for label, text in [("dotted keys at the top", 'model.name = "gaussian"\nmodel.n = 200\nrun.iterations = 20\n'),
                        ("inline tables", 'model = { name = "gaussian", n = 200 }\nrun = { iterations = 20 }\n'),
                        ("quoted keys", '["model"]\n"name" = "gaussian"\n"n" = 200\n'),
                        ("a literal string", "[model]\nname = 'gaussian'\nn = 200\n"),
                        ("a multi-line string", '[model]\nname = """gaussian"""\nn = 200\n')]:
        cases.append(Case("config", f"file: {label}", ["run", "--config", "c.toml", "--quiet", "--out", "out"], DONE,
                          setup=writes(c__toml=text)))
    cases.append(Case("config", "file: a NUL in the data path", ["run", "--config", "c.toml", "--quiet", "--out", "out"],
                      BAD_INPUT, names="model.data", setup=writes(c__toml=BASE_CONFIGS["csv.toml"].replace(
                          '"data.csv"', '"data.csv\\u0000.txt"'))))
    # numbers where the file gives them as TOML's own nan and inf
    for key in ("integrator.step_size", "integrator.temperature", "model.noise_sd"):
        section, name = key.split(".")
        for value in ("nan", "+inf", "-nan"):
            text = BASE_CONFIGS["sim.toml"].replace(f"[{section}]\n", f"[{section}]\n{name} = {value}\n", 1)
            cases.append(Case("config", f"file: {key} = {value}", ["run", "--config", "c.toml", "--quiet", "--out", "out"],
                              BAD_INPUT, names=(key, name), setup=writes(c__toml=text)))
    return cases


SIMULATED_CONFIGS = {
    "lda": f'[model]\nname = "lda"\ntopics = 3\ndocs = 40\nwords = 30\ndoc_length = 20\n[estimator]\nbatch_size = 5\n'
           f'[integrator]\nstep_size = 1e-3\n{RUN_KEYS}',
    "pmf": f'[model]\nname = "pmf"\nrank = 2\nusers = 20\nitems = 20\nratings = 200\n[estimator]\nbatch_size = 20\n'
           f'[integrator]\nstep_size = 1e-3\n{RUN_KEYS}',
}


# ---------------------------------------------------------------------------------------------
# Family: plugins


def plugin_copy(source_name, target_name, cut=None, folder="pdir"):
    def setup(ctx):
        source = ctx.options.plugin_files[source_name]
        target = ctx.path(folder) / f"sgmcmc-model-{target_name}.so"
        target.parent.mkdir(exist_ok=True)
        data = Path(source).read_bytes()
        target.write_bytes(data[:cut] if cut is not None else data)
    return setup


def plugin_dir_with(entry, make):
    def setup(ctx):
        folder = ctx.path("pdir")
        folder.mkdir(exist_ok=True)
        make(folder / f"sgmcmc-model-{entry}.so")
    return setup


def fifo_at(path):
    os.mkfifo(path)


def plugin_cases():
    cases = []
    with_dir = lambda *args: ["--plugin-dir", "pdir"] + list(args)
    # (label, setup making pdir/sgmcmc-model-<name>.so, name)
    bad_entries = [
        ("truncated", plugin_copy("gaussian", "cut", cut=4096), "cut"),
        ("cut to half", lambda c: plugin_copy("gaussian", "half", cut=os.path.getsize(c.options.plugin_files["gaussian"]) // 2)(c), "half"),
        ("empty file", plugin_dir_with("empty", lambda p: p.write_bytes(b"")), "empty"),
        ("not ELF (text)", plugin_dir_with("text", lambda p: p.write_text("not a library\n")), "text"),
        ("ELF magic then junk", plugin_dir_with("junk", lambda p: p.write_bytes(b"\x7fELF" + random.Random(3).randbytes(5000))), "junk"),
        ("a FIFO", plugin_dir_with("fifo", fifo_at), "fifo"),
        ("a folder", plugin_dir_with("folder", lambda p: p.mkdir()), "folder"),
        ("a dangling symlink", plugin_dir_with("dangling", lambda p: os.symlink("nowhere.so", p)), "dangling"),
        ("a symlink loop", plugin_dir_with("loop", lambda p: os.symlink(p.name, p)), "loop"),
        ("another model's plugin under this name", plugin_copy("gaussian", "logistic"), "logistic"),
        ("another model's plugin under a new name", plugin_copy("logistic", "renamed"), "renamed"),
    ]
    for label, setup, name in bad_entries:
        cases.append(Case("plugins", f"run model in plugin dir: {label}",
                          run_args("sim.toml", f'model.name="{name}"') + with_dir(), BAD_INPUT, names=name, setup=setup))
        cases.append(Case("plugins", f"list beside: {label}", ["list"] + with_dir(), DONE, setup=setup, out=None,
                          output_has=name))
        cases.append(Case("plugins", f"run gaussian beside: {label}", run_args("sim.toml") + with_dir(), DONE,
                          setup=setup))
        cases.append(Case("plugins", f"check-model path: {label}", ["check-model", f"pdir/sgmcmc-model-{name}.so"],
                          BAD_INPUT, names=name, setup=setup, out=None))
    cases += [
        Case("plugins", "unknown model name", run_args("sim.toml", 'model.name="nosuch"'), BAD_INPUT, names="nosuch"),
        Case("plugins", "misspelt model name", run_args("sim.toml", 'model.name="gausian"'), BAD_INPUT, names="gaussian"),
        Case("plugins", "a 300-character model name", run_args("sim.toml", f'model.name="{"m" * 300}"'), BAD_INPUT,
             names="m" * 300),
        Case("plugins", "a model path that does not exist", run_args("sim.toml", 'model.name="./sgmcmc-model-x.so"'),
             BAD_INPUT, names="sgmcmc-model-x.so"),
        Case("plugins", "a model name with a slash and NUL", run_args("sim.toml", 'model.name="a/\\u0000b"'), BAD_INPUT,
             names=("model.name", "a/")),
        Case("plugins", "--plugin-dir missing", run_args("sim.toml") + ["--plugin-dir", "nodir"], BAD_INPUT, names="nodir"),
        Case("plugins", "--plugin-dir a file", run_args("sim.toml") + ["--plugin-dir", "sim.toml"], BAD_INPUT,
             names="sim.toml"),
        Case("plugins", "list --plugin-dir missing", ["list", "--plugin-dir", "nodir"], BAD_INPUT, names="nodir", out=None),
        Case("plugins", "SGMCMC_PLUGIN_PATH with junk entries", run_args("sim.toml"), DONE,
             env={"SGMCMC_PLUGIN_PATH": "nodir::sim.toml:/dev/null"}),
        Case("plugins", "list with SGMCMC_PLUGIN_PATH junk", ["list"], DONE, out=None, output_has="gaussian",
             env={"SGMCMC_PLUGIN_PATH": "nodir::sim.toml:/dev/null"}),
        Case("plugins", "an unreadable plugin folder entry", run_args("sim.toml") + with_dir(), DONE,
             setup=plugin_dir_with("locked", lambda p: (p.mkdir(), p.chmod(0))),
             skip="runs as root: mode 000 does not lock root out" if IS_ROOT else None),
    ]
    fixtures = [
        ("no_exports", BAD_INPUT, "not an sgmcmc model plugin"),
        ("other_interface_version", BAD_INPUT, "interface version"),
        ("other_fingerprint", BAD_INPUT, "built with"),
        ("throwing_factory", BAD_INPUT, "fixture factory refuses"),
    ]
    for fixture, expect, says in fixtures:
        path = "{fixtures}/sgmcmc-model-" + fixture + ".so"
        cases.append(Case("plugins", f"fixture {fixture}: run", run_args("sim.toml", f"model.name={toml_string(path)}"),
                          expect, names=fixture, output_has=says))
    for fixture, says in [("gradient_sign", "FAIL"), ("batch_drops_last_item", "FAIL"), ("quantity_not_finite", "FAIL"),
                          ("crashes_in_quantities", "the plugin crashed it"), ("capabilities_disagree", "FAIL"),
                          ("workspace_state_not_saved", "FAIL"), ("throwing_factory", "FAIL")]:
        cases.append(Case("plugins", f"fixture {fixture}: check-model",
                          ["check-model", "{fixtures}/sgmcmc-model-" + fixture + ".so"], 1, out=None, output_has=says,
                          crashes_on_purpose=fixture == "crashes_in_quantities"))
    cases.append(Case("plugins", "fixture internal_error: run (a plugin bug is exit 3)",
                      ["run", "--config", "bug.toml", "--quiet", "--out", "out", "--set",
                       "model.name=" + toml_string("{fixtures}/sgmcmc-model-internal_error.so")], 3,
                      setup=writes(bug__toml='[model]\nname = "x"\n[estimator]\nname = "exact"\n[run]\niterations = 10\n'),
                      may_be_internal=True, output_has="internal error"))
    cases.append(Case("plugins", "list --plugin-dir the fixtures", ["list", "--plugin-dir", "{fixtures}"], DONE, out=None,
                      output_has="NOT LOADABLE"))
    return cases


# ---------------------------------------------------------------------------------------------
# Family: run folders


STOPPED = run_args("sim.toml", "run.iterations=40", "run.checkpoint_every=10") + ["--stop-after", "20"]
COMPLETE = run_args("sim.toml", "run.iterations=40")


def stopped_run(*mutations):
    """A run stopped after its checkpoint at iteration 20 of 40, then changed by `mutations`."""
    def setup(ctx):
        result = ctx.cli(STOPPED)
        if result.code != 0:
            raise RuntimeError(f"the stopped run failed: {result.stderr.strip()}")
        for mutate in mutations:
            mutate(ctx)
    return setup


def complete_run(args=None, *mutations):
    def setup(ctx):
        result = ctx.cli(args or COMPLETE)
        if result.code != 0:
            raise RuntimeError(f"the run failed: {result.stderr.strip()}")
        for mutate in mutations:
            mutate(ctx)
    return setup


def cut(name, keep):
    def mutate(ctx):
        path = ctx.path(name)
        data = path.read_bytes()
        path.write_bytes(data[:keep(len(data))])
    return mutate


def flip(name, at=lambda n: n // 2):
    def mutate(ctx):
        path = ctx.path(name)
        data = bytearray(path.read_bytes())
        data[at(len(data))] ^= 0x01
        path.write_bytes(bytes(data))
    return mutate


def tear_slot(name, index, cut=False):
    """Slot `index` of a checkpoint file as a write the machine died in leaves it: 8 of its bytes
    overwritten, or (`cut`, the last slot) the file ending in its middle. The layout is
    sgmcmc.state's (format 7): the slot size S at byte 12, the slots at 4096 and 4096 + S."""
    def mutate(ctx):
        path = ctx.path(name)
        data = path.read_bytes()
        start = 4096 + index * int.from_bytes(data[12:20], "little")
        if cut:
            data = data[:start + (len(data) - start) // 2]
        else:
            data = data[:start + 100] + b"torn...." + data[start + 108:]
        path.write_bytes(data)
    return mutate


def cut_last_draw(name):
    """Cut a chain file in the middle of its last draw (the closing comment lines gone too)."""
    def mutate(ctx):
        path = ctx.path(name)
        lines = path.read_bytes().splitlines(True)
        while lines and lines[-1].startswith(b"#"):
            lines.pop()
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
        path.write_bytes(b"".join(lines))
    return mutate


def remove(name):
    return lambda ctx: ctx.path(name).unlink()


def replace_with(name, content):
    return lambda ctx: ctx.path(name).write_bytes(content)


def append(name, content):
    def mutate(ctx):
        with open(ctx.path(name), "ab") as f:
            f.write(content)
    return mutate


def same_as_straight_run(ctx, result):
    """The resumed folder's draws equal those of a run never stopped."""
    straight = ctx.cli(run_args("sim.toml", "run.iterations=40", "run.checkpoint_every=10", out="straight"))
    if straight.code != 0:
        return f"the straight run failed: {straight.stderr.strip()}"
    for k in (1,):
        a = strip_elapsed(ctx.path(f"out/chain-{k}.csv"))
        b = strip_elapsed(ctx.path(f"straight/chain-{k}.csv"))
        if a != b:
            return f"chain-{k}.csv differs from the run never stopped"
    return None


def strip_elapsed(path: Path):
    return [l for l in path.read_text().splitlines() if "Elapsed" not in l and "seconds" not in l]


RESUME = ["run", "--resume", "out", "--quiet"]


def run_folder_cases():
    sim = lambda *sets: run_args("sim.toml", *sets)
    cases = [
        Case("run folders", "--out is a file", run_args("sim.toml", out="sim.toml"), BAD_INPUT, names="sim.toml", out=None),
        Case("run folders", "--out under a file", run_args("sim.toml", out="sim.toml/x"), BAD_INPUT, names="sim.toml",
             out=None),
        Case("run folders", "--out /dev/null", run_args("sim.toml", out="/dev/null"), BAD_INPUT, names="/dev/null", out=None),
        Case("run folders", "--out a 300-character name", run_args("sim.toml", out="o" * 300), BAD_INPUT, names="o" * 300,
             out=None),
        Case("run folders", "--out an empty name", run_args("sim.toml", out=""), BAD_INPUT, names=("--out", "output folder"), out=None),
        Case("run folders", "--out a folder with a file, no --replace", sim(), BAD_INPUT, names="out",
             setup=writes({"out/keep": b"precious\n"})),
        Case("run folders", "--out an earlier run, no --replace", sim(), BAD_INPUT, names="out", setup=complete_run()),
        Case("run folders", "--out an earlier run, --replace", sim() + ["--replace"], DONE, setup=complete_run()),
        Case("run folders", "--out an empty folder", sim(), DONE, setup=lambda c: c.path("out").mkdir()),
        Case("run folders", "--replace keeps a user's other files", sim() + ["--replace"], DONE,
             setup=writes({"out/precious.txt": b"keep me\n"}), check=has_file("out/precious.txt")),
        Case("run folders", "--replace of 4 chains by 1 leaves no stale chain file", sim() + ["--replace"], DONE,
             setup=complete_run(run_args("sim.toml", "run.chains=4", 'output.gradients="exact"')),
             check=lambda c, r: next((f"stale {p.name} left" for p in c.path("out").glob("*-[234].csv")), None)
             or (None if not c.path("out/gradients-1.csv").exists() else "stale gradients-1.csv left")),
        Case("run folders", "--replace with run.init the folder replaced", sim('run.init="out"') + ["--replace"], DONE,
             setup=complete_run()),
        Case("run folders", "--out . --replace keeps the data and configurations", run_args("csv.toml", out=".") +
             ["--replace"], DONE, out=".", check=has_file("data.csv")),
        Case("run folders", "--out a read-only folder", sim(), BAD_INPUT, names="out",
             setup=lambda c: (c.path("out").mkdir(), c.path("out").chmod(0o500)),
             skip="runs as root: a read-only folder is writable" if IS_ROOT else None),
        Case("run folders", "--resume a folder that does not exist", ["run", "--resume", "nope", "--quiet"], BAD_INPUT,
             names="nope", out=None),
        Case("run folders", "--resume a file", ["run", "--resume", "sim.toml", "--quiet"], BAD_INPUT, names="sim.toml",
             out=None),
        Case("run folders", "--resume a folder that is no run", RESUME, BAD_INPUT, names="out",
             setup=writes({"out/notes": b"hello\n"})),
        Case("run folders", "--resume an empty folder", RESUME, BAD_INPUT, names="out",
             setup=lambda c: c.path("out").mkdir()),
        Case("run folders", "--resume a complete run", RESUME, BAD_INPUT, names="out", setup=complete_run()),
        Case("run folders", "--resume a complete run with checkpoints", RESUME, BAD_INPUT, names="out",
             setup=complete_run(sim("run.iterations=40", "run.checkpoint_every=10"))),
        Case("run folders", "--resume a stopped run", RESUME, DONE, setup=stopped_run(), check=same_as_straight_run),
        Case("run folders", "--resume a stopped run twice", RESUME, BAD_INPUT, names="out",
             setup=stopped_run(lambda c: c.cli(RESUME))),
        Case("run folders", "--resume, checkpoint deleted (the chain restarts)", RESUME, DONE,
             setup=stopped_run(remove("out/checkpoint-1.bin")), check=same_as_straight_run),
        Case("run folders", "--resume, checkpoint truncated", RESUME, BAD_INPUT, names="checkpoint-1.bin",
             setup=stopped_run(cut("out/checkpoint-1.bin", lambda n: n // 2))),
        # The stopped run's checkpoint file: slot 0 holds iteration 10's, slot 1 (the newest) 20's.
        Case("run folders", "--resume, checkpoint's older slot torn (the newest is read)", RESUME, DONE,
             setup=stopped_run(tear_slot("out/checkpoint-1.bin", 0)), check=same_as_straight_run),
        Case("run folders", "--resume, checkpoint's newest slot torn (resumes from the one before)", RESUME, DONE,
             setup=stopped_run(tear_slot("out/checkpoint-1.bin", 1)), check=same_as_straight_run),
        Case("run folders", "--resume, checkpoint's newest slot cut (resumes from the one before)", RESUME, DONE,
             setup=stopped_run(tear_slot("out/checkpoint-1.bin", 1, cut=True)), check=same_as_straight_run),
        Case("run folders", "--resume, checkpoint's two slots torn", RESUME, BAD_INPUT, names="checkpoint-1.bin",
             setup=stopped_run(tear_slot("out/checkpoint-1.bin", 0), tear_slot("out/checkpoint-1.bin", 1))),
        Case("run folders", "--resume, checkpoint emptied", RESUME, BAD_INPUT, names="checkpoint-1.bin",
             setup=stopped_run(replace_with("out/checkpoint-1.bin", b""))),
        Case("run folders", "--resume, checkpoint replaced by text", RESUME, BAD_INPUT, names="checkpoint-1.bin",
             setup=stopped_run(replace_with("out/checkpoint-1.bin", b"not a checkpoint\n" * 10))),
        Case("run folders", "--resume, checkpoint a folder", RESUME, BAD_INPUT, names="checkpoint-1.bin",
             setup=stopped_run(remove("out/checkpoint-1.bin"), lambda c: c.path("out/checkpoint-1.bin").mkdir())),
        Case("run folders", "--resume, checkpoint metrics truncated", RESUME, BAD_INPUT, names="checkpoint-1-metrics.bin",
             setup=stopped_run(cut("out/checkpoint-1-metrics.bin", lambda n: n // 2))),
        Case("run folders", "--resume, checkpoint metrics flipped", RESUME, BAD_INPUT, names="checkpoint-1-metrics.bin",
             setup=stopped_run(flip("out/checkpoint-1-metrics.bin"))),
        Case("run folders", "--resume, checkpoint.json deleted", RESUME, BAD_INPUT, names="checkpoint.json",
             setup=stopped_run(remove("out/checkpoint.json"))),
        Case("run folders", "--resume, checkpoint.json not JSON", RESUME, BAD_INPUT, names="checkpoint.json",
             setup=stopped_run(replace_with("out/checkpoint.json", b"{ broken"))),
        Case("run folders", "--resume, checkpoint.json an empty object", RESUME, BAD_INPUT, names="checkpoint.json",
             setup=stopped_run(replace_with("out/checkpoint.json", b"{}"))),
        Case("run folders", "--resume, config.toml deleted", RESUME, BAD_INPUT, names=("config.toml", "checkpoint.json"),
             setup=stopped_run(remove("out/config.toml"))),
        Case("run folders", "--resume, config.toml changed", RESUME, BAD_INPUT, names=("config.toml", "run.iterations"),
             setup=stopped_run(lambda c: c.path("out/config.toml").write_text(
                 c.path("out/config.toml").read_text().replace("iterations = 40", "iterations = 50")))),
        Case("run folders", "--resume, chain file cut before the checkpoint", RESUME, BAD_INPUT, names="chain-1.csv",
             setup=stopped_run(cut("out/chain-1.csv", lambda n: n // 2))),
        Case("run folders", "--resume, chain file one byte changed", RESUME, BAD_INPUT, names="chain-1.csv",
             setup=stopped_run(flip("out/chain-1.csv", lambda n: n - 30))),
        Case("run folders", "--resume, chain file deleted", RESUME, BAD_INPUT, names="chain-1.csv",
             setup=stopped_run(remove("out/chain-1.csv"))),
        Case("run folders", "--resume, chain file with rows beyond the checkpoint", RESUME, DONE,
             setup=stopped_run(append("out/chain-1.csv", b"0,1,0.001,1,2,3\n0,1,0.001,1,2")), check=same_as_straight_run),
        Case("run folders", "--resume, chain file a folder", RESUME, BAD_INPUT, names="chain-1.csv",
             setup=stopped_run(remove("out/chain-1.csv"), lambda c: c.path("out/chain-1.csv").mkdir())),
        Case("run folders", "--resume, a stale .lock left by a killed run", RESUME, DONE,
             setup=stopped_run(writes({"out/.lock": b"pid 999999 host elsewhere\n"})), check=same_as_straight_run),
        Case("run folders", "--resume with another --set", RESUME + ["--set", "integrator.step_size=2e-3"], BAD_INPUT,
             names="integrator.step_size", setup=stopped_run()),
        Case("run folders", "--resume with --threads -1", RESUME + ["--threads", "-1"], BAD_INPUT, names="--threads",
             setup=stopped_run()),
        Case("run folders", "--resume, manifest.json junk", RESUME, BAD_INPUT, names="manifest.json",
             setup=stopped_run(replace_with("out/manifest.json", b"\x00junk"))),
    ]
    # data changed under a resumed run
    data_run = run_args("csv.toml", "run.iterations=40", "run.checkpoint_every=10") + ["--stop-after", "20"]
    changed = lambda c: c.path("data.csv").write_bytes(csv_rows(seed=11))
    touched = lambda c: os.utime(c.path("data.csv"), (1e9, 1e9))
    cases += [
        Case("run folders", "--resume after the data changed", RESUME, BAD_INPUT, names="data.csv",
             setup=complete_run(data_run, changed)),
        Case("run folders", "--resume after the data changed, --allow-changed-data", RESUME + ["--allow-changed-data"],
             DONE, setup=complete_run(data_run, changed)),
        Case("run folders", "--resume after the data was only touched", RESUME, DONE, setup=complete_run(data_run, touched)),
        Case("run folders", "--resume after the data was deleted", RESUME, BAD_INPUT, names="data.csv",
             setup=complete_run(data_run, remove("data.csv"))),
        Case("run folders", "--resume after the data grew a row", RESUME, BAD_INPUT, names="data.csv",
             setup=complete_run(data_run, append("data.csv", b"1,2,3,4\n"))),
    ]
    # run.init from damaged folders and files
    init = lambda value: run_args("sim.toml", f"run.init={toml_string(value)}", out="out2")
    cases += [
        Case("run folders", "run.init a complete run", init("out"), DONE, setup=complete_run(), out="out2"),
        Case("run folders", "run.init a run with its chain file cut mid-line", init("out"), BAD_INPUT, names="chain-1.csv",
             setup=complete_run(None, cut_last_draw("out/chain-1.csv")), out="out2"),
        Case("run folders", "run.init an empty folder", init("empty"), BAD_INPUT, names="empty",
             setup=lambda c: c.path("empty").mkdir(), out="out2"),
        Case("run folders", "run.init a CSV missing a parameter", init("start.csv"), BAD_INPUT, names=("start.csv", "beta.3"),
             setup=writes(start__csv=b"beta.1,beta.2\n1,2\n"), out="out2"),
        Case("run folders", "run.init a CSV with nan", init("start.csv"), BAD_INPUT, names="start.csv",
             setup=writes(start__csv=b"beta.1,beta.2,beta.3\n1,nan,2\n"), out="out2"),
        Case("run folders", "run.init a CSV with a header only", init("start.csv"), BAD_INPUT, names="start.csv",
             setup=writes(start__csv=b"beta.1,beta.2,beta.3\n"), out="out2"),
        Case("run folders", "run.init_draw beyond the rows", init("start.csv") + ["--set", "run.init_draw=5"], BAD_INPUT,
             names=("run.init_draw", "start.csv"), setup=writes(start__csv=b"beta.1,beta.2,beta.3\n1,2,3\n"), out="out2"),
        Case("run folders", "run.init /dev/zero", init("/dev/zero"), BAD_INPUT, names="/dev/zero", out="out2"),
        Case("run folders", "run.init a 300-character name", init("i" * 300), BAD_INPUT, names="i" * 300, out="out2"),
    ]
    return cases


# ---------------------------------------------------------------------------------------------
# Family: signals (timing)


LONG_RUN = run_args("sim.toml", "run.iterations=100000000", "run.eval_every=1000", "run.thin=1000")


def interrupt_then_resume(sig, twice=False, extra=()):
    """Signal a long run once it writes draws: it must exit 130 with a resumable folder, and the resumed run,
    interrupted in turn, must do the same (the resume is judged)."""
    def driver(ctx):
        args = LONG_RUN + list(extra)
        start = time.monotonic()
        process = ctx.spawn(args)
        if not wait_for(lambda: ctx.path("out/chain-1.csv").is_file() and ctx.path("out/chain-1.csv").stat().st_size > 2000):
            process.kill()
            return noted(finish(process, args, start), "no draws written within 20 s")
        process.send_signal(sig)
        if twice:
            time.sleep(0.002)
            process.send_signal(sig)
        first = finish(process, args, start)
        if first.code != INTERRUPTED and not (twice and first.code == -sig):
            return first
        if first.code == INTERRUPTED and (problem := run_folder_problem(ctx.path("out"), INTERRUPTED)):
            return noted(first, problem)
        if first.code == INTERRUPTED and "--resume" not in first.stdout + first.stderr:
            return noted(first, "no 'sgmcmc run --resume' hint")
        process = ctx.spawn(RESUME)
        start = time.monotonic()
        wait_for(lambda: ctx.path("out/.lock").exists(), 5)
        time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        return finish(process, RESUME, start)
    return driver


def differs_from_straight_run(ctx, straight_args):
    straight = ctx.cli(straight_args)
    if straight.code != DONE:
        return f"the run never stopped ended with {straight.code}"
    if strip_elapsed(ctx.path("out/chain-1.csv")) != strip_elapsed(ctx.path("straight/chain-1.csv")):
        return "the resumed chain-1.csv differs from that of a run never stopped"
    return ""


MODERATE_RUN = ("run.iterations=3000000", "run.thin=30000", "run.eval_every=30000")


def interrupt_short_run_then_resume(sig):
    """Signal a run of about a second; the resumed folder must hold the draws of a run never stopped."""
    args = run_args("sim.toml", *MODERATE_RUN)

    def driver(ctx):
        start = time.monotonic()
        process = ctx.spawn(args)
        if not wait_for(lambda: ctx.path("out/chain-1.csv").is_file() and draws_in(ctx.path("out/chain-1.csv")) >= 2):
            process.kill()
            return noted(finish(process, args, start), "no draws written within 20 s")
        process.send_signal(sig)
        first = finish(process, args, start)
        if first.code != INTERRUPTED:
            return first
        resumed = ctx.cli(RESUME)
        if resumed.code != DONE:
            return resumed
        return noted(resumed, differs_from_straight_run(ctx, run_args("sim.toml", *MODERATE_RUN, out="straight")))
    return driver


def kill_then_resume(ctx):
    sets = MODERATE_RUN + ("run.checkpoint_every=300000",)
    args = run_args("sim.toml", *sets)
    start = time.monotonic()
    process = ctx.spawn(args)
    wait_for(lambda: ctx.path("out/checkpoint-1.bin").is_file())
    process.send_signal(signal.SIGKILL)
    finish(process, args, start)
    resumed = ctx.cli(RESUME)
    if resumed.code != DONE:
        return resumed
    return noted(resumed, differs_from_straight_run(ctx, run_args("sim.toml", *sets, out="straight")))


def interrupt_centring(ctx):
    args = run_args("sim.toml", 'estimator.name="cv"', "estimator.sgd_iterations=2000000000", "model.n=200")
    start = time.monotonic()
    process = ctx.spawn(args)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    return finish(process, args, start, timeout=20)


def interrupt_sweep(ctx):
    """sweep does not catch SIGINT (runners/README.md): it dies of it, and --resume then completes."""
    ctx.write("s.toml", 'preset = "demo"\n[base.run]\niterations = 1000000\nchains = 1\nthin = 100000\n'
                        'eval_every = 100000\n[axes]\n"run.seed" = [1, 2]\n')
    args = ["sweep", "s.toml", "--out", "sw", "--quiet", "--jobs", "2"]
    start = time.monotonic()
    process = ctx.spawn(args)
    wait_for(lambda: any(ctx.path("sw").glob("*/chain-1.csv")))
    process.send_signal(signal.SIGINT)
    first = finish(process, args, start)
    if first.code not in (-signal.SIGINT, INTERRUPTED):
        return first
    return ctx.cli(["sweep", "s.toml", "--out", "sw", "--quiet", "--resume"])


def signal_cases():
    return [
        Case("signals", "SIGINT during a run, resume stays resumable", [], INTERRUPTED, timing=True,
             driver=interrupt_then_resume(signal.SIGINT)),
        Case("signals", "SIGTERM during a run, resume stays resumable", [], INTERRUPTED, timing=True,
             driver=interrupt_then_resume(signal.SIGTERM)),
        Case("signals", "SIGINT during a 4-chain run on 2 threads", [], INTERRUPTED, timing=True,
             driver=interrupt_then_resume(signal.SIGINT, extra=["--chains", "4", "--threads", "2"])),
        Case("signals", "SIGINT twice", [], (INTERRUPTED, -signal.SIGINT), timing=True,
             driver=interrupt_then_resume(signal.SIGINT, twice=True)),
        Case("signals", "SIGINT, resume equals a run never stopped", [], DONE, timing=True,
             driver=interrupt_short_run_then_resume(signal.SIGINT)),
        Case("signals", "SIGTERM, resume equals a run never stopped", [], DONE, timing=True,
             driver=interrupt_short_run_then_resume(signal.SIGTERM)),
        Case("signals", "SIGKILL after a checkpoint, resume equals a run never stopped", [], DONE, timing=True,
             driver=kill_then_resume),
        Case("signals", "SIGINT during cv's centring", [], INTERRUPTED, timing=True, driver=interrupt_centring),
        Case("signals", "SIGINT during a sweep, then sweep --resume", [], (DONE,), timing=True, driver=interrupt_sweep,
             out=None),
    ]


# ---------------------------------------------------------------------------------------------
# Family: concurrency (timing)


def second_writer(second_args, expect_pid=True):
    def driver(ctx):
        first_args = LONG_RUN + ["--set", "run.checkpoint_every=100000"]  # so a resume reaches the lock
        start = time.monotonic()
        first = ctx.spawn(first_args)
        if not wait_for(lambda: ctx.path("out/chain-1.csv").is_file()):
            first.kill()
            return finish(first, first_args, start)
        second = ctx.cli(second_args)
        first.send_signal(signal.SIGINT)
        first_result = finish(first, first_args, start)
        if first_result.code != INTERRUPTED:
            return noted(second, f"the first writer ended with {first_result.code}, not 130")
        if (problem := run_folder_problem(ctx.path("out"), INTERRUPTED)):
            return noted(second, f"the first writer's folder: {problem}")
        if expect_pid and second.code == BAD_INPUT and "pid" not in second.stderr:
            return noted(second, "the refusal names no holder pid")
        return second
    return driver


def two_resumes(ctx):
    ctx.cli(run_args("sim.toml", "run.iterations=2000000", "run.thin=20000", "run.eval_every=20000",
                     "run.checkpoint_every=100000") + ["--stop-after", "100000"])
    a = ctx.spawn(RESUME)
    b = ctx.spawn(RESUME)
    start = time.monotonic()
    ra, rb = finish(a, RESUME, start), finish(b, RESUME, start)
    codes = sorted([ra.code, rb.code])
    if codes == [DONE, BAD_INPUT]:
        return rb if rb.code == BAD_INPUT else ra
    if codes == [DONE, DONE]:
        return noted(ra, "both resumes ended 0: two writers in one folder")
    return ra if ra.code != DONE else rb


def concurrency_cases():
    return [
        Case("concurrency", "--resume into a live run's folder", [], BAD_INPUT, names="out", timing=True,
             driver=second_writer(RESUME), out=None),
        Case("concurrency", "--replace into a live run's folder", [], BAD_INPUT, names="out", timing=True,
             driver=second_writer(run_args("sim.toml") + ["--replace"]), out=None),
        Case("concurrency", "summary of a live run's folder", [], (DONE, BAD_INPUT), names="out", timing=True,
             driver=second_writer(["summary", "out"], expect_pid=False), out=None),
        Case("concurrency", "two resumes at once", [], BAD_INPUT, names="out", timing=True, driver=two_resumes, out=None),
        Case("concurrency", "a new run into a live run's folder", [], BAD_INPUT, names="out", timing=True,
             driver=second_writer(run_args("sim.toml"), expect_pid=False), out=None),
    ]


# ---------------------------------------------------------------------------------------------
# Family: numerics


def diverged_with_draws_kept(ctx, result):
    manifest = json.loads(ctx.path("out/manifest.json").read_text())
    message = manifest["chains"][0].get("message", "")
    return None if "diverged" in (result.stderr + message) else "no divergence message"


INTEGRATORS_UNCORRECTED = ["sgld", "psgld", "sghmc", "sgnht", "badodab", "obabo", "baoab", "mala", "hmc"]


def identical_across_threads(ctx, result):
    other = ctx.cli(run_args("sim.toml", "run.chains=4", out="other") + ["--threads", "1"])
    for k in range(1, 5):
        if strip_elapsed(ctx.path(f"out/chain-{k}.csv")) != strip_elapsed(ctx.path(f"other/chain-{k}.csv")):
            return f"chain-{k}.csv differs between 1 and 4 threads"
    return None


def numerics_cases():
    cases = []
    for integrator in INTEGRATORS_UNCORRECTED:
        # psgld must freeze its preconditioner after a warmup (issue 41, item 3)
        warmup = ["run.warmup=10"] if integrator == "psgld" else []
        cases.append(Case("numerics", f"{integrator}: step 1e12 diverges", run_args(
            "sim.toml", f'integrator.name="{integrator}"', "integrator.step_size=1e12", *warmup), DIVERGED,
            check=diverged_with_draws_kept))
        cases.append(Case("numerics", f"{integrator}: step 1e-300 runs", run_args(
            "sim.toml", f'integrator.name="{integrator}"', "integrator.step_size=1e-300", *warmup), DONE))
    cases.append(Case("numerics", "psgld without a warmup is refused", run_args("sim.toml", 'integrator.name="psgld"'),
                      BAD_INPUT, names=("run.warmup", "psgld")))
    for integrator in ["mala", "obabo", "baoab", "hmc"]:
        cases.append(Case("numerics", f"{integrator} + mh: step 1e12 is rejected, not a crash", run_args(
            "sim.toml", f'integrator.name="{integrator}"', 'corrector.name="mh"', 'estimator.name="exact"',
            "integrator.step_size=1e12"), (DONE, DIVERGED)))
    cases += [
        Case("numerics", "temperature 1e-300", run_args("sim.toml", "integrator.temperature=1e-300"), DONE),
        Case("numerics", "temperature 1e300 diverges", run_args("sim.toml", "integrator.temperature=1e300"), DIVERGED),
        Case("numerics", "mass 1e300", run_args("sim.toml", "integrator.mass=1e300"), DONE),
        Case("numerics", "mass 1e-300 diverges", run_args("sim.toml", "integrator.mass=1e-300"), DIVERGED),
        Case("numerics", "a runaway below overflow stops as diverged",
             run_args("sim.toml", "integrator.step_size=0.03", "model.n=200", "run.iterations=2000"), DIVERGED),
        Case("numerics", "divergence_threshold 0 lets a finite runaway go on",
             run_args("sim.toml", "integrator.step_size=0.0105", "run.divergence_threshold=0", "run.iterations=200"),
             (DONE, DIVERGED)),
        Case("numerics", "cv with a huge SGD step: the centring diverges",
             run_args("sim.toml", 'estimator.name="cv"', "estimator.sgd_step_size=1e12"), (DIVERGED, BAD_INPUT),
             names="sgd_step_size"),
        Case("numerics", "adapt_step_size from a step of 1e6",
             run_args("sim.toml", 'integrator.name="mala"', 'corrector.name="mh"', 'estimator.name="exact"',
                      "integrator.adapt_step_size=true", "run.warmup=100", "integrator.step_size=1e6"), DONE),
        Case("numerics", "adapt_mass on a short warmup",
             run_args("sim.toml", "integrator.adapt_mass=true", "run.warmup=30"), DONE),
        Case("numerics", "dense adapted mass with a large sgld step",
             run_args("sim.toml", "integrator.adapt_mass=true", 'integrator.metric="dense"', "run.warmup=200",
                      "integrator.step_size=0.5"), (DONE, DIVERGED)),
        Case("numerics", "thin beyond the iterations", run_args("sim.toml", "run.thin=50"), BAD_INPUT, names="run.thin"),
        Case("numerics", "4 chains: 4 threads equal 1 thread", run_args("sim.toml", "run.chains=4") + ["--threads", "4"],
             DONE, check=identical_across_threads),
        Case("numerics", "a data value of 1e300 (finite)", run_args("csv.toml"), (DIVERGED, BAD_INPUT), names="data.csv",
             setup=writes(data__csv=with_line(csv_rows(), b"1e300,1,2,3"))),
        Case("numerics", "constant data column", run_args("csv.toml"), DONE,
             setup=writes(data__csv=b"\n".join(l.rsplit(b",", 1)[0] + b",1" for l in csv_rows().splitlines()) + b"\n")),
        Case("numerics", "one training row", run_args("csv.toml", "model.test_size=0"), (DONE, BAD_INPUT),
             names=("data.csv", "batch_size", "test_size"), setup=writes(data__csv=csv_rows(rows=1))),
        Case("numerics", "lp on a diverging chain", run_args("sim.toml", "run.lp=true", "integrator.step_size=1e12"),
             DIVERGED),
        Case("numerics", "cyclical schedule with cycle 1", run_args("sim.toml", 'integrator.schedule="cyclical"',
                                                                     "integrator.cycle_length=1"), (DONE, BAD_INPUT),
             names="cycle_length"),
    ]
    return cases


# ---------------------------------------------------------------------------------------------
# Family: every subcommand


SWEEP_FILES = [
    # (label, content, expected, names)
    ("a valid sweep", 'preset = "demo"\n[base.run]\niterations = 20\nchains = 1\n[axes]\n"run.seed" = [1, 2]\n', DONE, None),
    ("empty file", "", BAD_INPUT, "s.toml"),
    ("malformed TOML", "preset = \n", BAD_INPUT, "s.toml"),
    ("unknown preset", 'preset = "nope"\n[axes]\n"run.seed" = [1]\n', BAD_INPUT, "nope"),
    ("empty axis", 'preset = "demo"\n[axes]\n"run.seed" = []\n', BAD_INPUT, "run.seed"),
    ("mixed kinds in an axis", 'preset = "demo"\n[axes]\n"run.seed" = [1, "a"]\n', BAD_INPUT, "run.seed"),
    ("a string for a number", 'preset = "demo"\n[axes]\n"integrator.step_size" = ["a"]\n', BAD_INPUT,
     "integrator.step_size"),
    ("an unknown key", 'preset = "demo"\n[axes]\n"run.seeed" = [1]\n', BAD_INPUT, "run.seeed"),
    ("an unknown section", 'preset = "demo"\n[axes]\n"nope.x" = [1]\n', BAD_INPUT, "nope.x"),
    ("zipped axes of different lengths",
     'preset = "demo"\n[axes]\n"run.seed" = [1, 2]\n"model.n" = [200]\nzip = [["run.seed", "model.n"]]\n', BAD_INPUT,
     ("zip", "zipped")),
    ("exclude names a non-axis", 'preset = "demo"\n[axes]\n"run.seed" = [1, 2]\nexclude = [{ "model.n" = 3 }]\n', BAD_INPUT,
     "model.n"),
    ("a misspelt model in a cell", 'preset = "demo"\n[axes]\n"model.name" = ["gaussian", "gausian"]\n', BAD_INPUT,
     "gausian"),
    ("every cell refused", 'preset = "demo"\n[base.corrector]\nname = "mh"\n[axes]\n"integrator.name" = ["sghmc", "sgnht"]\n',
     BAD_INPUT, ("skipped", "sghmc")),
    ("too many cells", 'preset = "demo"\n[axes]\n"run.seed" = [' + ", ".join(map(str, range(1, 402))) + "]\n", BAD_INPUT,
     "--max-cells"),
    ("no preset and no config", '[axes]\n"run.seed" = [1]\n', BAD_INPUT, "s.toml"),
    ("an unknown top-level key", 'preset = "demo"\ncolour = 3\n[axes]\n"run.seed" = [1]\n', BAD_INPUT, "colour"),
    ("axes not a table", 'preset = "demo"\naxes = 3\n', BAD_INPUT, "axes"),
    # cells are folders named from their axis values: names that would collide or exceed 255 bytes
    ("two data files whose cell names collide",
     "config = '''\n" + BASE_CONFIGS["csv.toml"] + "'''\n[axes]\n\"model.data\" = [\"data.csv\", \"data csv\"]\n", DONE, None),
    ("an array axis of 60 numbers (cell names beyond 255 bytes)",
     "config = '''\n" + BASE_CONFIGS["sim.toml"].replace("dim = 3", "dim = 60") + "'''\n[axes]\n\"integrator.mass\" = [["
     + ", ".join(["1.0"] * 60) + "], [" + ", ".join(["2.0"] * 60) + "]]\n", DONE, None),
    ("a cell diverging", 'preset = "demo"\n[base.run]\niterations = 20\nchains = 1\n[axes]\n"integrator.step_size" = [1e-5, 1e12]\n',
     DIVERGED, None),
]


def has_file(name):
    """A check: the command wrote this file (a success that writes nothing is no success)."""
    return lambda ctx, result: None if ctx.path(name).is_file() else f"{name} was not written"


def every_cell_recorded(ctx, result):
    """Each row of a sweep's summary.csv has its own cell folder with a manifest."""
    cells = [row.split(",")[0] for row in ctx.path("sw/summary.csv").read_text().splitlines()[1:]]
    if len(set(cells)) != len(cells):
        return "two cells share a folder"
    missing = [cell for cell in cells if not (ctx.path("sw") / cell / "manifest.json").is_file()]
    return f"cell {missing[0]} has no manifest.json" if missing else None


def finished_run(args=None):
    return complete_run(args or run_args("sim.toml", "run.iterations=40"))


def lda_run(ctx):
    result = ctx.cli(["run", "--config", "docword.toml", "--quiet", "--out", "lda"])
    if result.code != 0:
        raise RuntimeError(result.stderr)


def gradient_run(ctx):
    result = ctx.cli(run_args("sim.toml", "run.iterations=200", 'output.gradients="exact"', out="grad"))
    if result.code != 0:
        raise RuntimeError(result.stderr)


def sweep_folder(ctx):
    ctx.write("s.toml", SWEEP_FILES[0][1])
    result = ctx.cli(["sweep", "s.toml", "--out", "sw", "--quiet"])
    if result.code != 0:
        raise RuntimeError(result.stderr)


def subcommand_cases():
    cases = []
    for label, content, expect, names in SWEEP_FILES:
        cases.append(Case("subcommands", f"sweep: {label}", ["sweep", "s.toml", "--out", "sw", "--quiet"], expect,
                          names=names, setup=then(writes(s__toml=content), writes({"data csv": csv_rows(seed=12)})),
                          out=None, check=every_cell_recorded if expect != BAD_INPUT else None))

    def sub(name, args, expect, names=None, setup=None, out=None, **more):
        """A subcommand's case; no run folder is judged unless `out` names one."""
        return Case("subcommands", name, args, expect, names=names, setup=setup, out=out, **more)

    cases += [
        sub("no subcommand", [], BAD_INPUT),
        sub("an unknown subcommand", ["frobnicate"], BAD_INPUT, "frobnicate"),
        sub("--help", ["--help"], DONE, output_has="Subcommands"),
        sub("run: no arguments", ["run"], BAD_INPUT, "--preset"),
        sub("run: an unknown flag", ["run", "--preset", "demo", "--bogus"], BAD_INPUT, "--bogus"),
        sub("run: unknown preset", ["run", "--preset", "nope"], BAD_INPUT, "nope"),
        sub("run: --preset and --config", ["run", "--preset", "demo", "--config", "sim.toml"], BAD_INPUT, ("--preset", "--config")),
        sub("run: --config without a value", ["run", "--config"], BAD_INPUT, "--config"),
        sub("run: --threads 0", run_args("sim.toml") + ["--threads", "0"], (DONE, BAD_INPUT), "--threads", out="out"),
        sub("run: --threads -1", run_args("sim.toml") + ["--threads", "-1"], BAD_INPUT, "--threads"),
        sub("run: --threads abc", run_args("sim.toml") + ["--threads", "abc"], BAD_INPUT, "--threads"),
        sub("run: --threads 100000", run_args("sim.toml") + ["--threads", "100000"], (DONE, BAD_INPUT), "--threads",
            out="out"),
        sub("run: --chains 0", run_args("sim.toml") + ["--chains", "0"], BAD_INPUT, ("--chains", "run.chains")),
        sub("run: --seed abc", run_args("sim.toml") + ["--seed", "abc"], BAD_INPUT, ("--seed", "run.seed")),
        sub("run: --seed 2^64", run_args("sim.toml") + ["--seed", "18446744073709551616"], BAD_INPUT, ("--seed", "run.seed")),
        sub("run: --stop-after without checkpoints", run_args("sim.toml") + ["--stop-after", "10"], BAD_INPUT, ("--stop-after", "stopping after")),
        sub("run: --stop-after not a multiple", run_args("sim.toml") + ["--checkpoint-every", "10", "--stop-after", "15"],
            BAD_INPUT, ("--stop-after", "stopping after")),
        sub("run: --checkpoint-every 0 (off)", run_args("sim.toml") + ["--checkpoint-every", "0"], DONE, out="out"),
        sub("run: --resume with --replace", ["run", "--resume", "out", "--replace"], BAD_INPUT, ("--replace", "--resume"),
            setup=stopped_run(), out="out"),
        sub("run: a valid preset, tiny", ["run", "--preset", "demo", "--set", "run.iterations=20", "--set", "run.warmup=0",
                                          "--set", "model.n=200", "--chains", "1", "--quiet", "--out", "out"], DONE, out="out"),
        sub("sweep: missing file", ["sweep", "nope.toml"], BAD_INPUT, "nope.toml"),
        sub("sweep: a folder", ["sweep", "."], BAD_INPUT, "."),
        sub("sweep: /dev/zero", ["sweep", "/dev/zero"], BAD_INPUT, "/dev/zero"),
        sub("sweep: --jobs 0", ["sweep", "s.toml", "--jobs", "0", "--out", "sw"], BAD_INPUT, "--jobs",
            setup=writes(s__toml=SWEEP_FILES[0][1])),
        sub("sweep: --jobs 100000", ["sweep", "s.toml", "--jobs", "100000", "--out", "sw", "--quiet"], (DONE, BAD_INPUT),
            "--jobs", setup=writes(s__toml=SWEEP_FILES[0][1]), check=lambda c, r: None if r.code != 0 else has_file("sw/summary.csv")(c, r)),
        sub("sweep: --out a file", ["sweep", "s.toml", "--out", "sim.toml"], BAD_INPUT, "sim.toml",
            setup=writes(s__toml=SWEEP_FILES[0][1])),
        sub("sweep: into an earlier sweep without --resume", ["sweep", "s.toml", "--out", "sw", "--quiet"], BAD_INPUT,
            ("sw", "--resume"), setup=sweep_folder),
        sub("sweep: --resume a complete sweep", ["sweep", "s.toml", "--out", "sw", "--quiet", "--resume"], DONE,
            setup=sweep_folder, check=has_file("sw/results.csv")),
        sub("sweep: --resume with a damaged cell", ["sweep", "s.toml", "--out", "sw", "--quiet", "--resume"], (DONE, BAD_INPUT),
            "metrics.csv", setup=then(sweep_folder, lambda c: next(c.path("sw").glob("*/metrics.csv")).write_bytes(b"junk\x00"))),
        sub("sweep: --max-cells 0", ["sweep", "s.toml", "--max-cells", "0", "--out", "sw"], BAD_INPUT, "--max-cells",
            setup=writes(s__toml=SWEEP_FILES[0][1])),
        sub("plot: missing folder", ["plot", "nope"], BAD_INPUT, "nope"),
        sub("plot: a run folder, not a sweep", ["plot", "out"], BAD_INPUT, "out", setup=finished_run()),
        sub("plot: an empty folder", ["plot", "empty"], BAD_INPUT, "empty", setup=lambda c: c.path("empty").mkdir()),
        sub("plot: results.csv cut mid-line", ["plot", "sw"], BAD_INPUT, "results.csv",
            setup=then(sweep_folder, cut("sw/results.csv", lambda n: n - 5))),
        sub("plot: results.csv binary junk", ["plot", "sw"], BAD_INPUT, "results.csv",
            setup=then(sweep_folder, replace_with("sw/results.csv", random.Random(5).randbytes(3000)))),
        sub("plot: results.csv header only", ["plot", "sw"], BAD_INPUT, "results.csv",
            setup=then(sweep_folder, lambda c: c.path("sw/results.csv").write_text(
                c.path("sw/results.csv").read_text().splitlines()[0] + "\n"))),
        sub("plot: --metric that does not exist", ["plot", "sw", "--metric", "nope"], BAD_INPUT, "nope", setup=sweep_folder),
        sub("plot: --panel that does not exist", ["plot", "sw", "--panel", "nope"], BAD_INPUT, "nope", setup=sweep_folder),
        sub("plot: --time bad", ["plot", "sw", "--time", "nope"], BAD_INPUT, ("--time", "nope"), setup=sweep_folder),
        sub("list: an unknown flag", ["list", "--bogus"], BAD_INPUT, "--bogus"),
        sub("list: an extra argument", ["list", "extra"], BAD_INPUT, "extra"),
        sub("presets: an extra argument", ["presets", "extra"], BAD_INPUT, "extra"),
        sub("presets", ["presets"], DONE, output_has="gaussian-obabo-mh"),
        sub("check-model: no argument", ["check-model"], BAD_INPUT, ("plugin", "NAME", "model")),
        sub("check-model: unknown model", ["check-model", "nope"], BAD_INPUT, "nope"),
        sub("check-model: a text file", ["check-model", "sim.toml"], BAD_INPUT, "sim.toml"),
        sub("check-model: a folder", ["check-model", "."], BAD_INPUT, "."),
        sub("check-model: /dev/zero", ["check-model", "/dev/zero"], BAD_INPUT, "/dev/zero"),
        sub("check-model: gaussian, n = -1", ["check-model", "gaussian", "--set", "model.n=-1"], 1, output_has="model.n"),
        sub("check-model: gaussian, a run key", ["check-model", "gaussian", "--set", "run.seed=2"], (1, BAD_INPUT), "run.seed"),
        sub("check-model: gaussian, small", ["check-model", "gaussian", "--set", "model.n=200"], DONE, output_has="PASS"),
        sub("check-model: manual template with test_rows = 0", [], DONE, driver=new_model_check, output_has="PASS"),
        sub("summary: missing folder", ["summary", "nope"], BAD_INPUT, "nope"),
        sub("summary: a file", ["summary", "sim.toml"], BAD_INPUT, "sim.toml"),
        sub("summary: an empty folder", ["summary", "empty"], BAD_INPUT, "empty", setup=lambda c: c.path("empty").mkdir()),
        sub("summary: a complete run", ["summary", "out"], DONE, setup=finished_run(), output_has="ess_bulk"),
        sub("summary: --parameters unknown", ["summary", "out", "--parameters", "nope"], BAD_INPUT, "nope", setup=finished_run()),
        sub("summary: --max-parameters -1", ["summary", "out", "--max-parameters", "-1"], (DONE, BAD_INPUT), "--max-parameters",
            setup=finished_run()),
        sub("summary: --max-parameters abc", ["summary", "out", "--max-parameters", "abc"], BAD_INPUT, "--max-parameters",
            setup=finished_run()),
        sub("summary: chain file cut mid-line", ["summary", "out"], BAD_INPUT, "chain-1.csv",
            setup=then(finished_run(), cut_last_draw("out/chain-1.csv"))),
        sub("summary: chain file deleted", ["summary", "out"], BAD_INPUT, ("chain-1.csv", "chain-<k>.csv"),
            setup=then(finished_run(), remove("out/chain-1.csv"))),
        sub("summary: a stray chain file", ["summary", "out"], BAD_INPUT, "chain-2.csv",
            setup=then(finished_run(), lambda c: shutil.copy(c.path("out/chain-1.csv"), c.path("out/chain-2.csv")))),
        sub("summary: manifest junk", ["summary", "out"], BAD_INPUT, "manifest.json",
            setup=then(finished_run(), replace_with("out/manifest.json", b"\x00\x01junk"))),
        sub("summary: chain file nan draws", ["summary", "out"], (DONE, BAD_INPUT), "chain-1.csv",
            setup=then(finished_run(), lambda c: c.path("out/chain-1.csv").write_text(
                re.sub(r"(?m)^(0,[^,\n]*,[^,\n]*),[^,\n]*", r"\1,nan", c.path("out/chain-1.csv").read_text(), count=1)))),
        sub("summary: chain file /dev/zero", ["summary", "out"], BAD_INPUT, "chain-1.csv",
            setup=then(finished_run(), remove("out/chain-1.csv"), lambda c: os.symlink("/dev/zero", c.path("out/chain-1.csv")))),
        sub("zv: missing folder", ["zv", "nope"], BAD_INPUT, "nope"),
        sub("zv: a run without gradients", ["zv", "out"], BAD_INPUT, ("gradients", "out"), setup=finished_run()),
        sub("zv: a run with gradients", ["zv", "grad"], DONE, setup=gradient_run, output_has="zv1_mean"),
        sub("zv: --order 3", ["zv", "grad", "--order", "3"], BAD_INPUT, "--order", setup=gradient_run),
        sub("zv: --order abc", ["zv", "grad", "--order", "abc"], BAD_INPUT, "--order", setup=gradient_run),
        sub("zv: gradients file cut", ["zv", "grad"], BAD_INPUT, "gradients-1.csv",
            setup=then(gradient_run, cut("grad/gradients-1.csv", lambda n: n // 2 + 3))),
        sub("zv: gradients file deleted", ["zv", "grad"], BAD_INPUT, ("gradients-1.csv", "gradients-<k>.csv"),
            setup=then(gradient_run, remove("grad/gradients-1.csv"))),
        sub("topics: missing folder", ["topics", "nope"], BAD_INPUT, "nope"),
        sub("topics: a gaussian run", ["topics", "out"], BAD_INPUT, ("lda", "out"), setup=finished_run()),
        sub("topics: an lda run", ["topics", "lda"], DONE, setup=lda_run, output_has="topic 3:"),
        sub("topics: --top 0", ["topics", "lda", "--top", "0"], BAD_INPUT, "--top", setup=lda_run),
        sub("topics: --top -1", ["topics", "lda", "--top", "-1"], BAD_INPUT, "--top", setup=lda_run),
        sub("topics: --vocab missing", ["topics", "lda", "--vocab", "nope.txt"], BAD_INPUT, "nope.txt", setup=lda_run),
        sub("topics: --vocab too short", ["topics", "lda", "--vocab", "v.txt"], BAD_INPUT, "v.txt",
            setup=then(lda_run, writes(v__txt=b"a\nb\n"))),
        sub("topics: --vocab /dev/zero", ["topics", "lda", "--vocab", "/dev/zero"], BAD_INPUT, "/dev/zero", setup=lda_run),
        sub("new-model: no arguments", ["new-model"], BAD_INPUT, ("name", "NAME")),
        sub("new-model: valid", ["new-model", "mymodel", "proj"], DONE, check=has_file("proj/CMakeLists.txt")),
        sub("new-model: a name with a space", ["new-model", "my model", "proj"], BAD_INPUT, "my model"),
        sub("new-model: a name with a slash", ["new-model", "../evil", "proj"], BAD_INPUT, "../evil"),
        sub("new-model: an empty name", ["new-model", "", "proj"], BAD_INPUT, ("name", "''", "\"\"")),
        sub("new-model: --kind nope", ["new-model", "m", "proj", "--kind", "nope"], BAD_INPUT, ("--kind", "nope")),
        sub("new-model: DIR a file", ["new-model", "m", "sim.toml"], BAD_INPUT, "sim.toml"),
        sub("new-model: DIR not empty", ["new-model", "m", "proj"], BAD_INPUT, "proj", setup=writes({"proj/x": b"x"})),
        sub("new-model: a 300-character name", ["new-model", "n" * 300, "proj"], BAD_INPUT, "n" * 300),
        sub("sbc: no configuration", ["sbc"], BAD_INPUT, ("--preset", "--config")),
        sub("sbc: --replications 0", ["sbc", "--config", "sim.toml", "--replications", "0", "--out", "sbc"], BAD_INPUT,
            "--replications"),
        sub("sbc: --replications 1e12", ["sbc", "--config", "sim.toml", "--replications", "1000000000000", "--out", "sbc"],
            BAD_INPUT, "--replications"),
        sub("sbc: --draws 0", ["sbc", "--config", "sim.toml", "--draws", "0", "--out", "sbc"], BAD_INPUT, "--draws"),
        sub("sbc: --draws beyond the draws", ["sbc", "--config", "sim.toml", "--draws", "1000", "--replications", "2",
                                             "--out", "sbc"], BAD_INPUT, "--draws"),
        sub("sbc: --bins 0", ["sbc", "--config", "sim.toml", "--bins", "0", "--out", "sbc"], BAD_INPUT, "--bins"),
        sub("sbc: --alpha 1.5", ["sbc", "--config", "sim.toml", "--alpha", "1.5", "--out", "sbc"], BAD_INPUT, "--alpha"),
        sub("sbc: --alpha 0", ["sbc", "--config", "sim.toml", "--alpha", "0", "--out", "sbc"], BAD_INPUT, "--alpha"),
        sub("sbc: --simulations 0", ["sbc", "--config", "sim.toml", "--simulations", "0", "--replications", "2",
                                     "--draws", "9", "--out", "sbc"], BAD_INPUT, "--simulations"),
        sub("sbc: --quantities unknown", ["sbc", "--config", "sim.toml", "--quantities", "nope", "--out", "sbc"], BAD_INPUT,
            "nope"),
        sub("sbc: a model without prior simulation", ["sbc", "--config", "pmf-sim.toml", "--replications", "2", "--draws",
                                                     "9", "--out", "sbc"], BAD_INPUT, "pmf",
            setup=writes(pmf_sim__toml=SIMULATED_CONFIGS["pmf"])),
        sub("sbc: tiny and valid", ["sbc", "--config", "sim.toml", "--replications", "3", "--draws", "9", "--bins", "2",
                                    "--simulations", "200", "--out", "sbc", "--jobs", "2"], (DONE, 1),
            check=has_file("sbc/tests.csv")),
        sub("tune: no configuration", ["tune"], BAD_INPUT, ("--preset", "--config")),
        sub("tune: --steps with text", ["tune", "--config", "sim.toml", "--steps", "a,b", "--out", "t"], BAD_INPUT, "--steps"),
        sub("tune: --steps negative", ["tune", "--config", "sim.toml", "--steps", "-1,0.1", "--out", "t"], BAD_INPUT, "--steps"),
        sub("tune: --steps empty", ["tune", "--config", "sim.toml", "--steps", "", "--out", "t"], BAD_INPUT, "--steps"),
        sub("tune: --steps nan", ["tune", "--config", "sim.toml", "--steps", "nan,0.1", "--out", "t"], BAD_INPUT, "--steps"),
        sub("tune: --factor 1", ["tune", "--config", "sim.toml", "--factor", "1", "--out", "t"], BAD_INPUT, "--factor"),
        sub("tune: --factor 0", ["tune", "--config", "sim.toml", "--factor", "0", "--out", "t"], BAD_INPUT, "--factor"),
        sub("tune: --points 0", ["tune", "--config", "sim.toml", "--points", "0", "--out", "t"], BAD_INPUT, "--points"),
        sub("tune: --iterations 0", ["tune", "--config", "sim.toml", "--iterations", "0", "--out", "t"], BAD_INPUT,
            ("--iterations", "run.iterations")),
        sub("tune: --draws 0", ["tune", "--config", "sim.toml", "--draws", "0", "--out", "t"], BAD_INPUT, "--draws"),
        sub("tune: an lda configuration", ["tune", "--config", "docword.toml", "--out", "t"], BAD_INPUT, ("lda", "output.gradients")),
        sub("tune: adapt_step_size", ["tune", "--config", "sim.toml", "--set", 'integrator.name="mala"', "--set",
                                      'corrector.name="mh"', "--set", 'estimator.name="exact"', "--set",
                                      "integrator.adapt_step_size=true", "--set", "run.warmup=20", "--out", "t"],
            BAD_INPUT, "adapt_step_size"),
        sub("tune: tiny and valid", ["tune", "--config", "sim.toml", "--steps", "1e-4,1e-3", "--iterations", "100",
                                     "--draws", "50", "--out", "t", "--jobs", "2"], DONE,
            check=has_file("t/tuned.toml")),
        sub("tune: a step that diverges scores infinity", ["tune", "--config", "sim.toml", "--steps", "1e-3,1e12",
                                                           "--iterations", "100", "--draws", "50", "--out", "t"], DONE,
            check=has_file("t/tune.csv")),
        sub("tune: --out a file", ["tune", "--config", "sim.toml", "--steps", "1e-4,1e-3", "--out", "sim.toml"], BAD_INPUT,
            "sim.toml"),
        sub("gradient-variance: no --at", ["gradient-variance", "--config", "sim.toml"], BAD_INPUT, "--at"),
        sub("gradient-variance: --at missing", ["gradient-variance", "--config", "sim.toml", "--at", "nope"], BAD_INPUT, "nope"),
        sub("gradient-variance: --at junk CSV", ["gradient-variance", "--config", "sim.toml", "--at", "j.csv"], BAD_INPUT,
            "j.csv", setup=writes(j__csv=b"a,b\n1,2\n")),
        sub("gradient-variance: --at /dev/zero", ["gradient-variance", "--config", "sim.toml", "--at", "/dev/zero"], BAD_INPUT,
            "/dev/zero"),
        sub("gradient-variance: --points 0", ["gradient-variance", "--config", "sim.toml", "--at", "out", "--points", "0"],
            BAD_INPUT, "--points", setup=finished_run()),
        sub("gradient-variance: --repeats 1", ["gradient-variance", "--config", "sim.toml", "--at", "out", "--repeats", "1"],
            BAD_INPUT, "--repeats", setup=finished_run()),
        sub("gradient-variance: --csv in a missing folder", ["gradient-variance", "--config", "sim.toml", "--at", "out",
                                                             "--points", "2", "--repeats", "10", "--csv", "no/dir/g.csv"],
            BAD_INPUT, "no/dir/g.csv", setup=finished_run()),
        sub("gradient-variance: valid", ["gradient-variance", "--config", "sim.toml", "--at", "out", "--points", "2",
                                         "--repeats", "10"], DONE, setup=finished_run(), output_has="ratio"),
        sub("summary: an interrupted run", ["summary", "out"], (DONE, BAD_INPUT), "out", setup=stopped_run()),
        sub("summary: a diverged run", ["summary", "out"], (DONE, BAD_INPUT), "out",
            setup=lambda c: c.cli(run_args("sim.toml", "integrator.step_size=1e12"))),
        sub("summary: a sweep folder", ["summary", "sw"], BAD_INPUT, "sw", setup=sweep_folder),
        sub("summary: --parameters empty", ["summary", "out", "--parameters", ""], (DONE, BAD_INPUT), ("--parameters", "no column"),
            setup=finished_run()),
        sub("zv: a diverged run with gradients", ["zv", "out"], (DONE, BAD_INPUT), "out",
            setup=lambda c: c.cli(run_args("sim.toml", "integrator.step_size=1e12", 'output.gradients="exact"'))),
        sub("zv: gradients with nan", ["zv", "grad"], BAD_INPUT, "gradients-1.csv",
            setup=then(gradient_run, lambda c: c.path("grad/gradients-1.csv").write_text(
                re.sub(r"(?m)^(-?[0-9][^,\n]*),", "nan,", c.path("grad/gradients-1.csv").read_text(), count=3)))),
        sub("run: run.init from a run of another model", run_args("sim.toml", 'run.init="lda"', out="o2"), BAD_INPUT,
            ("lda", "beta.1"), setup=lda_run),
        sub("run: a 300-character --out for a sweep", ["sweep", "s.toml", "--out", "w" * 300, "--quiet"], BAD_INPUT,
            "w" * 300, setup=writes(s__toml=SWEEP_FILES[0][1])),
        sub("sweep: --resume a run folder", ["sweep", "s.toml", "--out", "out", "--resume", "--quiet"], BAD_INPUT, "out",
            setup=then(finished_run(), writes(s__toml=SWEEP_FILES[0][1]))),
        sub("sbc: --resume a run folder", ["sbc", "--config", "sim.toml", "--replications", "2", "--draws", "9", "--out",
                                           "out", "--resume"], BAD_INPUT, "out", setup=finished_run()),
        sub("tune: --resume a run folder", ["tune", "--config", "sim.toml", "--steps", "1e-4,1e-3", "--out", "out",
                                            "--resume"], BAD_INPUT, "out", setup=finished_run()),
        sub("gradient-variance: --at a run of another model", ["gradient-variance", "--config", "sim.toml", "--at", "lda"],
            BAD_INPUT, ("lda", "beta.1"), setup=lda_run),
        sub("gradient-variance: --at with nan", ["gradient-variance", "--config", "sim.toml", "--at", "n.csv"], BAD_INPUT,
            "n.csv", setup=writes(n__csv=b"beta.1,beta.2,beta.3\n1,nan,2\n")),
    ]
    return cases


def new_model_check(ctx):
    made = ctx.cli(["new-model", "tmpl", "proj", "--kind", "manual"])
    if made.code != 0:
        return made
    # building the template would take a minute; check-model on a bundled model with the same key
    return ctx.cli(["check-model", "gaussian", "--set", "model.n=200", "--set", "model.test_size=0"])


# ---------------------------------------------------------------------------------------------
# The sweep


FAMILIES = {
    "data": lambda: data_content_cases() + data_name_cases() + data_format_cases(),
    "config": config_cases,
    "plugins": plugin_cases,
    "run folders": run_folder_cases,
    "signals": signal_cases,
    "concurrency": concurrency_cases,
    "numerics": numerics_cases,
    "subcommands": subcommand_cases,
}


def all_cases(options):
    cases = []
    for family, make in FAMILIES.items():
        if options.only and family != options.only:
            continue
        for case in make():
            if case.family != family:
                case = dataclasses.replace(case, family=family)
            if not options.fixtures and any("{fixtures}" in a for a in case.args):
                case = dataclasses.replace(case, skip="no --fixtures folder")
            if options.reproducible and case.timing:
                continue
            cases.append(case)
    return cases


def plugin_files(cli):
    """The bundled plugins' files, from `sgmcmc list` (the sweep copies and cuts them)."""
    listing = subprocess.run([cli, "list"], capture_output=True, text=True, timeout=TIMEOUT_SECONDS).stdout
    files, current = {}, None
    for line in listing.splitlines():
        if match := re.match(r"^  (\w+)\s{2,}", line):
            current = match.group(1)
        elif (match := re.match(r"^\s+from: (.+)$", line)) and current:
            files[current] = match.group(1).strip()
    return files


def cap_data_segment(cli):
    """Cap the data segment of every process the sweep starts, unless the CLI cannot start under the cap
    (AddressSanitizer maps terabytes of shadow memory up front): then the memory budget alone remains."""
    original = resource.getrlimit(resource.RLIMIT_DATA)
    hard = original[1]
    cap = DATA_LIMIT_BYTES if hard == resource.RLIM_INFINITY else min(DATA_LIMIT_BYTES, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    probe = subprocess.run([cli, "presets"], capture_output=True, timeout=TIMEOUT_SECONDS)
    if probe.returncode != 0:
        resource.setrlimit(resource.RLIMIT_DATA, original)
        print(f"note: {cli} does not start with its data segment capped at {DATA_LIMIT_BYTES >> 30} GiB; "
              "running without the cap")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cli", required=True, help="the sgmcmc executable")
    parser.add_argument("--fixtures", help="the folder of the test fixture plugins (build/release/test-plugins)")
    parser.add_argument("--only", choices=list(FAMILIES), help="one family")
    parser.add_argument("--list", action="store_true", help="list the cases and run none")
    parser.add_argument("--table", action="store_true", help="print the table as Markdown (for tests/README.md)")
    parser.add_argument("--reproducible", action="store_true", help="leave out cases that depend on timing or the machine")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once (2)")
    parser.add_argument("--verbose", action="store_true", help="print every case's outcome")
    options = parser.parse_args(argv)
    options.cli = str(Path(options.cli).resolve())
    os.environ["SGMCMC_MEMORY_LIMIT_MB"] = str(MEMORY_BUDGET_MB)
    cap_data_segment(options.cli)
    if not os.access(options.cli, os.X_OK):
        parser.error(f"{options.cli} is not an executable")
    options.fixtures = str(Path(options.fixtures).resolve()) if options.fixtures else None
    options.plugin_files = plugin_files(options.cli)
    cases = all_cases(options)
    if options.list:
        for case in cases:
            mark = " [timing]" if case.timing else ""
            print(f"{case.family}\t{case.name}{mark}\t{shlex.join(case.args)}")
        print(f"{len(cases)} cases")
        return 0

    start = time.monotonic()
    cases = [dataclasses.replace(c, skip=f"known hang: {HANGS[(c.family, c.name)]}") if (c.family, c.name) in HANGS else c
             for c in cases]
    runnable = [c for c in cases if not c.skip]
    # timing cases run alone, after the others, so that the pool's load does not decide them
    parallel = [c for c in runnable if not c.timing]
    serial = [c for c in runnable if c.timing]
    outcomes = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(options.jobs, 1)) as pool:
        futures = {pool.submit(run_case, c, options): c for c in parallel}
        for future in concurrent.futures.as_completed(futures):
            outcomes[id(futures[future])] = future.result()
    for case in serial:
        outcomes[id(case)] = run_case(case, options)

    table = {}
    failed = known = 0
    for case in cases:
        row = table.setdefault(case.family, [0, 0, 0, 0])
        if case.skip:
            row[2] += 1
            if options.verbose:
                print(f"SKIP  {case.family}: {case.name}: {case.skip}")
            continue
        problems, result = outcomes[id(case)]
        row[0] += 1
        cause = KNOWN_BAD.get((case.family, case.name))
        if cause and problems:
            known += 1
            row[3] += 1
            print(f"KNOWN {case.family}: {case.name}: {cause}")
        elif cause:
            failed += 1
            print(f"FIXED {case.family}: {case.name}: now good; remove it from KNOWN_BAD")
        elif problems:
            failed += 1
            first_line = next((l for l in (result.stderr.strip() or result.stdout.strip()).splitlines()), "")[:200]
            print(f"BAD   {case.family}: {case.name}: {'; '.join(problems)}\n      $ {shlex.join(result.args)}\n"
                  f"      said: {first_line}")
        else:
            row[1] += 1
            if options.verbose:
                print(f"good  {case.family}: {case.name} (exit {result.code})")
    print()
    if options.table:
        print("| family | cases | good | known bad |\n|---|---:|---:|---:|")
        for family, (count, good, skipped, bad) in table.items():
            print(f"| {family} | {count} | {good} | {bad} |")
        total = [sum(r[k] for r in table.values()) for k in (0, 1, 3)]
        print(f"| **all** | **{total[0]}** | **{total[1]}** | **{total[2]}** |")
    else:
        print(f"{'family':<14} {'cases':>6} {'good':>6} {'known bad':>10} {'skipped':>8}")
        for family, (count, good, skipped, bad) in table.items():
            print(f"{family:<14} {count:>6} {good:>6} {bad:>10} {skipped:>8}")
    skipped = sum(r[2] for r in table.values())
    print(f"\n{sum(r[0] for r in table.values()) - failed} passed, {failed} failed"
          f"{f', {skipped} skipped' if skipped else ''} ({known} of the passed known bad; "
          f"{time.monotonic() - start:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

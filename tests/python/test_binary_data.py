"""Binary data sets between NumPy and sgmcmc (issue 45 item 2), through the real CLI: NumPy's own
np.save writes the .npy files and the .csr folder's arrays that sgmcmc runs on, and np.load reads
what `sgmcmc convert` writes. A run on NumPy's file must draw what the run on the same values as
CSV text draws, bit for bit.

Run by ctest as "python: binary data" (tests/CMakeLists.txt sets SGMCMC_CLI), or by hand:
    SGMCMC_CLI=build/release/bin/sgmcmc python3 -m unittest -v tests/python/test_binary_data.py
"""

import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

import numpy as np

CONFIG = """[model]
name = "glm"
family = "{family}"
data = "{data}"
{extra}
[estimator]
name = "minibatch"
batch_size = 20
[integrator]
name = "sgld"
step_size = 0.001
[run]
warmup = 20
iterations = 60
chains = 2
seed = 7
"""


def sgmcmc(*arguments):
    return subprocess.run([os.environ["SGMCMC_CLI"], *map(str, arguments)], capture_output=True, text=True)


def draws(run):
    """Both chains' draws: the lines of each chain file that are not comments."""
    return [[line for line in (run / f"chain-{k}.csv").read_text().splitlines() if not line.startswith("#")]
            for k in (1, 2)]


class TestBinaryData(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="sgmcmc-binary-test-"))
        rng = np.random.default_rng(3)
        self.x = rng.normal(size=(120, 3))
        self.x[rng.uniform(size=self.x.shape) < 0.4] = 0.0  # zeros, which the CSR layout leaves out
        self.y = (rng.uniform(size=120) < 1 / (1 + np.exp(-self.x @ [1.0, -0.5, 0.25]))).astype(float)
        self.table = np.column_stack([self.y, self.x])
        self.csv = self.tmp / "rows.csv"
        np.savetxt(self.csv, self.table, delimiter=",", fmt="%.17g")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_on(self, data, name, extra=""):
        config = self.tmp / f"{name}.toml"
        config.write_text(CONFIG.format(family="bernoulli", data=data, extra=extra))
        out = self.tmp / name
        result = sgmcmc("run", "--config", config, "--out", out, "--quiet")
        self.assertEqual(result.returncode, 0, result.stderr)
        chains = draws(out)
        self.assertEqual([len(chain) for chain in chains], [61, 61])  # the header and 60 draws
        return chains

    def test_numpy_npy_draws_as_csv(self):
        np.save(self.tmp / "rows.npy", self.table)  # float64, C order: np.save's defaults
        self.assertEqual(self.run_on(self.tmp / "rows.npy", "npy"), self.run_on(self.csv, "csv"))

    def test_numpy_float32_npy_with_float_storage_draws_as_csv(self):
        np.save(self.tmp / "rows32.npy", self.table.astype(np.float32))
        self.assertEqual(self.run_on(self.tmp / "rows32.npy", "npy32", 'storage = "float"'),
                         self.run_on(self.csv, "csv32", 'storage = "float"'))

    def test_numpy_csr_folder_draws_as_csv(self):
        folder = self.tmp / "rows.csr"
        folder.mkdir()
        rows, columns = np.nonzero(self.x)  # row-major order: columns increase along each row
        np.save(folder / "data.npy", self.x[rows, columns])
        np.save(folder / "indices.npy", columns.astype(np.int32))
        np.save(folder / "indptr.npy", np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=len(self.x)))]))
        np.save(folder / "shape.npy", np.array(self.x.shape, dtype=np.int64))
        np.save(folder / "labels.npy", self.y)
        self.assertEqual(self.run_on(folder, "csr"), self.run_on(self.csv, "csv-csr"))

    def test_convert_writes_what_numpy_reads(self):
        result = sgmcmc("convert", self.csv, self.tmp / "converted.npy")
        self.assertEqual(result.returncode, 0, result.stderr)
        converted = np.load(self.tmp / "converted.npy")
        self.assertEqual(converted.dtype, np.dtype("<f8"))
        np.testing.assert_array_equal(converted, self.table)  # every bit: %.17g text reads back exactly
        result = sgmcmc("convert", self.csv, self.tmp / "converted.csr", "--dtype", "float32")
        self.assertEqual(result.returncode, 0, result.stderr)
        folder = self.tmp / "converted.csr"
        dense = np.zeros(tuple(np.load(folder / "shape.npy")), dtype=np.float32)
        indptr, indices, values = (np.load(folder / f"{name}.npy") for name in ("indptr", "indices", "data"))
        for i in range(len(dense)):
            dense[i, indices[indptr[i]:indptr[i + 1]]] = values[indptr[i]:indptr[i + 1]]
        np.testing.assert_array_equal(dense, self.x.astype(np.float32))
        np.testing.assert_array_equal(np.load(folder / "labels.npy"), self.y.astype(np.float32))

    def test_fortran_order_is_refused_naming_the_file(self):
        np.save(self.tmp / "fortran.npy", np.asfortranarray(self.table))
        config = self.tmp / "fortran.toml"
        config.write_text(CONFIG.format(family="bernoulli", data=self.tmp / "fortran.npy", extra=""))
        result = sgmcmc("run", "--config", config, "--out", self.tmp / "fortran", "--quiet")
        self.assertEqual(result.returncode, 2)
        self.assertIn("fortran.npy: fortran_order is True", result.stderr)

    def test_convert_of_more_rows_than_one_block_writes_what_numpy_reads(self):
        # convert writes a dense .npy 65,536 rows at a time (a file larger than memory converts):
        # 150,000 rows are three blocks, and the array must be the one NumPy parses from the text.
        rng = np.random.default_rng(5)
        table = np.column_stack([rng.integers(0, 2, 150_000), rng.normal(size=(150_000, 3))])
        csv = self.tmp / "big.csv"
        np.savetxt(csv, table, delimiter=",", fmt="%.17g", header="y,a,b,c", comments="")
        result = sgmcmc("convert", csv, self.tmp / "big.npy")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("150000 rows × 3 features", result.stderr)
        np.testing.assert_array_equal(np.load(self.tmp / "big.npy"), table)
        # LIBSVM: the width is the largest index in the whole file, here only in the last block's rows.
        libsvm = self.tmp / "big.libsvm"
        with libsvm.open("w") as out:
            for i, row in enumerate(table):
                width = 3 if i < 140_000 else 5
                out.write(f"{row[0]:.17g} " + " ".join(f"{j + 1}:{row[1 + j % 3]:.17g}" for j in range(width)) + "\n")
        result = sgmcmc("convert", libsvm, self.tmp / "wide.npy")
        self.assertEqual(result.returncode, 0, result.stderr)
        wide = np.zeros((150_000, 6))
        wide[:, :4] = table
        wide[140_000:, 4:] = table[140_000:, 1:3]
        np.testing.assert_array_equal(np.load(self.tmp / "wide.npy"), wide)

    def test_convert_failing_in_a_later_block_names_the_line_and_leaves_no_file(self):
        rows = ["1,0.5,0.25"] * 100_000
        rows[99_000] = "1,0.5,oops"
        csv = self.tmp / "bad.csv"
        csv.write_text("\n".join(rows) + "\n")
        result = sgmcmc("convert", csv, self.tmp / "bad.npy")
        self.assertEqual(result.returncode, 2)
        self.assertIn("bad.csv:99001:7: 'oops' is not a number", result.stderr)
        self.assertEqual(sorted(p.name for p in self.tmp.iterdir() if p.name.startswith("bad.npy")), [])

    def test_convert_streams_past_the_memory_budget_and_reads_a_pipe_once(self):
        # A text file longer than the memory budget converts (blocks are held, not the file); the
        # 37 MB CSV here against a 20 MB budget was refused when the reader counted the whole file.
        rng = np.random.default_rng(9)
        table = np.column_stack([rng.integers(0, 2, 600_000), rng.normal(size=(600_000, 3))])
        csv = self.tmp / "long.csv"
        np.savetxt(csv, table, delimiter=",", fmt="%.17g")
        limited = subprocess.run([os.environ["SGMCMC_CLI"], "convert", str(csv), str(self.tmp / "long.npy")],
                                 capture_output=True, text=True, env={**os.environ, "SGMCMC_MEMORY_LIMIT_MB": "20"})
        self.assertEqual(limited.returncode, 0, limited.stderr)
        np.testing.assert_array_equal(np.load(self.tmp / "long.npy"), table)
        # LIBSVM without --features through a FIFO: read once (a second pass for the width would
        # find the pipe empty or wait for a writer that is gone), its rows held whole.
        fifo = self.tmp / "rows.fifo"
        os.mkfifo(fifo)
        text = "".join(f"{y:g} 1:{a:.17g} 3:{b:.17g}\n" for y, a, b, _ in table[:1000])
        writer = subprocess.Popen(["sh", "-c", f"cat > '{fifo}'"], stdin=subprocess.PIPE, text=True)
        converting = subprocess.Popen([os.environ["SGMCMC_CLI"], "convert", str(fifo), str(self.tmp / "fifo.npy")],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        writer.communicate(text, timeout=60)
        _, stderr = converting.communicate(timeout=60)
        self.assertEqual(converting.returncode, 0, stderr)
        expected = np.zeros((1000, 4))
        expected[:, 0], expected[:, 1], expected[:, 3] = table[:1000, 0], table[:1000, 1], table[:1000, 2]
        np.testing.assert_array_equal(np.load(self.tmp / "fifo.npy"), expected)

    def test_convert_refusals_of_the_writer_carry_no_parsing_hint(self):
        # A float32 label that would round is refused naming its line; the hint about a CSV read
        # because no ':' was seen is for parse errors, not for this.
        csv = self.tmp / "labels.csv"
        csv.write_text("1,0.5\n0.1,0.25\n")
        result = sgmcmc("convert", csv, self.tmp / "labels.npy", "--dtype", "float32")
        self.assertEqual(result.returncode, 2)
        self.assertIn("labels.csv:2: the label 0.1 is not a float32", result.stderr)
        self.assertNotIn("read as CSV", result.stderr)


if __name__ == "__main__":
    unittest.main()

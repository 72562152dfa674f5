"""End-to-end tests of the Python package runners/python/sgmcmc: the real CLI (SGMCMC_CLI) runs
every shipped model with small settings, the package reads the folder, and the tests compare
what it read with the files' text, the manifest and metrics, and with a netCDF export read back.

Run by ctest (tests/CMakeLists.txt sets SGMCMC_CLI and PYTHONPATH), or by hand:
    SGMCMC_CLI=build/release/bin/sgmcmc PYTHONPATH=runners/python python3 -m unittest discover -s tests/python
"""

import json
import math
import os
import shutil
import struct
import tempfile
import unittest
from pathlib import Path

import numpy as np
import xarray as xr

import sgmcmc
from sgmcmc.run import _toml_value

STATS = ["lp__", "accept_stat__", "stepsize__"]


def csv_text(path):
    """An independent reading of a Stan-style CSV: (header, rows of field strings)."""
    lines = [line for line in Path(path).read_text().splitlines() if line and not line.startswith("#")]
    return lines[0].split(","), [line.split(",") for line in lines[1:]]


def lp_not_computed(path):
    """Whether a chain file says in a comment that its lp__ column holds 0 for "not computed"
    (which the package reads back as NaN)."""
    return any(line.startswith("# lp__ = 0: not computed") for line in Path(path).read_text().splitlines())


def bits(x):
    return struct.pack("<d", x)


class RunCase(unittest.TestCase):
    """Helpers shared by the per-model cases."""

    tmp = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="sgmcmc-python-test-"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def assert_same_as_text(self, table, path):
        """Every value of `table` (a DataFrame) is the double float() makes of the CSV's text."""
        header, rows = csv_text(path)
        not_computed = lp_not_computed(path)
        self.assertEqual(list(table.columns), header, path)
        self.assertEqual(len(table), len(rows), f"{path}: rows")
        values = table.to_numpy()
        for i, row in enumerate(rows):
            self.assertEqual(len(row), len(header), f"{path}: row {i + 1}")
            for j, text in enumerate(row):
                expected, got = float(text), float(values[i, j])
                if not_computed and header[j] == "lp__":
                    self.assertEqual(text, "0", f"{path}: row {i + 1}, lp__ not computed")
                    expected = math.nan
                if math.isnan(expected):
                    self.assertTrue(math.isnan(got), f"{path}: row {i + 1}, {header[j]}: {text} read as {got}")
                else:
                    self.assertEqual(bits(expected), bits(got), f"{path}: row {i + 1}, {header[j]}: {text} read as {got!r}")

    def assert_folder_consistent(self, run, chains, iterations, thin, eval_every):
        """Draw counts follow iterations/thin; chain files, manifest and metrics agree."""
        self.assertEqual(run.num_chains, chains)
        self.assertEqual(run.chain_ids, list(range(1, chains + 1)))
        config = run.manifest["config"]["run"]
        self.assertEqual((config["chains"], config["iterations"], config["thin"]), (chains, iterations, thin))
        self.assertEqual(run.num_draws, [iterations // thin] * chains)
        self.assertEqual(len(run.manifest["chains"]), chains)
        for entry in run.manifest["chains"]:
            self.assertEqual(entry["status"], "complete")
        self.assertEqual(run.status, "complete")
        dimension = run.manifest["model"]["dimension"]
        self.assertEqual(len(run.parameter_names), dimension)
        stats = len(run.stat_columns)
        self.assertEqual(run.columns[:stats], run.stat_columns)
        self.assertEqual(run.stat_columns[:3], STATS)
        self.assertEqual(run.columns[stats:stats + dimension], run.parameter_names)
        # draws_array: chain k's table, in order
        array = run.draws_array()
        self.assertEqual(array.shape, (chains, iterations // thin, len(run.columns)))
        for c in range(chains):
            np.testing.assert_array_equal(array[c], run.chains[c].to_numpy())
        frame = run.draws_frame()
        self.assertEqual(len(frame), chains * (iterations // thin))
        self.assertEqual(sorted(set(frame["chain"])), run.chain_ids)
        # every chain file, exactly
        for k, table in zip(run.chain_ids, run.chains):
            self.assert_same_as_text(table, run.path / f"chain-{k}.csv")
        # metrics: one row per chain every eval_every iterations, the manifest's metric columns
        self.assert_same_as_text(run.metrics, run.path / "metrics.csv")
        self.assertEqual(list(run.metrics.columns[:5]), ["chain", "iteration", "seconds", "cpu_seconds", "item_gradients"])
        self.assertEqual(sorted(run.metrics["chain"].unique().tolist()), run.chain_ids)
        for k in run.chain_ids:
            rows = run.metrics[run.metrics["chain"] == k]
            self.assertTrue((rows["iteration"] % eval_every == 0).all())
            self.assertEqual(rows["iteration"].max(), iterations)
            # the item gradients of the last evaluation are the chain's cost in the manifest
            entry = run.manifest["chains"][k - 1]
            self.assertEqual(entry["chain"], k)
            self.assertEqual(entry["iterations"], iterations)
            self.assertEqual(rows["item_gradients"].iloc[-1], entry["item_gradients"])

    def assert_export_round_trip(self, run, name):
        """to_netcdf → open_dataset(group=...) gives back every value of every chain file (and of
        the gradient files), at the coordinates the column name gives."""
        path = self.tmp / f"{name}.nc"
        sgmcmc.to_netcdf(run, path)
        posterior = xr.open_dataset(path, group="posterior", engine="netcdf4").load()
        stats = xr.open_dataset(path, group="sample_stats", engine="netcdf4").load()
        draws = run.num_draws[0]
        for dataset in (posterior, stats):
            self.assertEqual(list(dataset.dims)[:2], ["chain", "draw"])
            self.assertEqual(dataset.sizes["chain"], run.num_chains)
            self.assertEqual(dataset.sizes["draw"], draws)
            self.assertEqual(dataset["chain"].values.tolist(), run.chain_ids)
            self.assertEqual(dataset["draw"].values.tolist(), list(range(draws)))
            self.assertEqual(dataset.attrs["inference_library"], "sgmcmc")
        names = {"lp__": "lp", "accept_stat__": "acceptance_rate", "stepsize__": "step_size",
                 "delta_energy__": "energy_error", "accepted__": "accepted"}
        self.assertEqual(sorted(stats.data_vars), sorted(names[column] for column in run.stat_columns))

        def value(dataset, column, prefix=""):
            base, *indices = column[len(prefix):].split(".")
            variable = dataset[base]
            selection = {f"{base}_dim_{i}": int(x) for i, x in enumerate(indices)}
            return variable.sel(selection).values if selection else variable.values

        def same(got, expected, label):
            self.assertEqual(got.shape, expected.shape, label)
            nan = np.isnan(expected)
            np.testing.assert_array_equal(np.isnan(got), nan, label)
            np.testing.assert_array_equal(got[~nan].view(np.int64), expected[~nan].view(np.int64), label)

        from_text = {}
        for k in run.chain_ids:
            header, rows = csv_text(run.path / f"chain-{k}.csv")
            not_computed = lp_not_computed(run.path / f"chain-{k}.csv")
            for j, column in enumerate(header):
                nan = not_computed and column == "lp__"
                from_text.setdefault(column, []).append([math.nan if nan else float(row[j]) for row in rows])
        for column, values in from_text.items():
            expected = np.asarray(values)
            got = stats[names[column]].values if column in names else value(posterior, column)
            same(got, expected, column)
        variables = {column.split(".")[0] for column in run.columns[len(run.stat_columns):]}
        self.assertEqual(set(posterior.data_vars), variables)
        if run.gradients is not None:
            gradients = xr.open_dataset(path, group="gradients", engine="netcdf4").load()
            for k in run.chain_ids:
                header, rows = csv_text(run.path / f"gradients-{k}.csv")
                for j, column in enumerate(header):
                    expected = np.asarray([float(row[j]) for row in rows])
                    same(value(gradients, column, "grad_lp.")[run.chain_ids.index(k)], expected, column)
        # open_netcdf reads the same groups back
        groups = sgmcmc.open_netcdf(path)
        self.assertEqual(set(groups), {"posterior", "sample_stats"} | ({"gradients"} if run.gradients else set()))
        xr.testing.assert_identical(groups["posterior"], posterior)
        return posterior


class TestGaussian(RunCase):
    """The demo preset (gaussian model: beta.1..beta.5), with and without recorded gradients."""

    def test_demo_preset(self):
        out = self.tmp / "demo"
        run = sgmcmc.run(preset="demo", set={"run.iterations": 200, "run.warmup": 0, "run.eval_every": 20,
                                              "model.n": 2000}, seed=3, chains=2, out=out)
        self.assertIsInstance(run, sgmcmc.Run)
        self.assertEqual(run.path, out)
        self.assertEqual(run.manifest["seed"], 3)
        self.assertEqual(run.manifest["model"]["name"], "gaussian")
        self.assertEqual(run.parameter_names, [f"beta.{j}" for j in range(1, 6)])
        self.assertEqual(run.quantity_names, [])
        self.assertIsNone(run.gradients)
        self.assert_folder_consistent(run, chains=2, iterations=200, thin=5, eval_every=20)
        # read_run on the folder gives the same as run() returned
        again = sgmcmc.read_run(out)
        for a, b in zip(run.chains, again.chains):
            np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())
        posterior = self.assert_export_round_trip(run, "demo")
        self.assertEqual(posterior["beta"].dims, ("chain", "draw", "beta_dim_0"))
        self.assertEqual(posterior["beta"].shape, (2, 40, 5))
        self.assertEqual(posterior["beta_dim_0"].values.tolist(), [1, 2, 3, 4, 5])

    def test_recorded_gradients_and_quantities(self):
        out = self.tmp / "demo-gradients"
        run = sgmcmc.run(preset="demo", set={"run": {"iterations": 100, "warmup": 0, "thin": 10, "eval_every": 50},
                                              "output.gradients": "exact", "run.lp": True}, chains=2, out=out)
        self.assertIsNotNone(run.gradients)
        self.assertEqual(len(run.gradients), 2)
        self.assertEqual(list(run.gradients[0].columns), [f"grad_lp.beta.{j}" for j in range(1, 6)])
        self.assertEqual(run.gradients_array().shape, (2, 10, 5))
        self.assertIn("held_out_log_density", run.quantity_names)
        self.assertFalse(np.isnan(run.chains[0]["lp__"]).any())
        for k in run.chain_ids:
            self.assert_same_as_text(run.gradients[k - 1], out / f"gradients-{k}.csv")
        self.assert_folder_consistent(run, chains=2, iterations=100, thin=10, eval_every=50)
        posterior = self.assert_export_round_trip(run, "demo-gradients")
        self.assertEqual(posterior["held_out_log_density"].dims, ("chain", "draw"))

    def test_mh_run(self):
        # An mh corrector adds delta_energy__ and accepted__ after the three sampler columns: they are
        # sample statistics, not parameters (a reader that took the three for all put them first
        # among the parameters and dropped the last two).
        run = sgmcmc.run(preset="gaussian-obabo-mh", set={"run": {"iterations": 100, "warmup": 0, "thin": 10,
                                                                  "eval_every": 50}, "estimator.batch_size": 400, "output.quantities": True,
                                                  "model.n": 2000},
                         chains=2, out=self.tmp / "obabo-mh")
        self.assertEqual(run.stat_columns, ["lp__", "accept_stat__", "stepsize__", "delta_energy__", "accepted__"])
        self.assertEqual(run.parameter_names, [f"beta.{j}" for j in range(1, 6)])
        self.assertEqual(run.quantity_names, ["held_out_log_density"])
        self.assertTrue(set(np.unique(run.chains[0]["accepted__"])) <= {0.0, 1.0})
        self.assert_folder_consistent(run, chains=2, iterations=100, thin=10, eval_every=50)
        posterior = self.assert_export_round_trip(run, "obabo-mh")
        self.assertEqual(sorted(posterior.data_vars), ["beta", "held_out_log_density"])

    def test_config_file(self):
        config = self.tmp / "small.toml"
        config.write_text('[model]\nname = "gaussian"\ndim = 3\nn = 500\n\n[run]\niterations = 20\nthin = 2\neval_every = 10\n')
        run = sgmcmc.run(config=config, set={"integrator.step_size": 1e-4}, out=self.tmp / "small")
        self.assertEqual(run.parameter_names, ["beta.1", "beta.2", "beta.3"])
        self.assertEqual(run.manifest["config"]["integrator"]["step_size"], 1e-4)
        self.assert_folder_consistent(run, chains=1, iterations=20, thin=2, eval_every=10)


class TestLogistic(RunCase):
    def test_covtype_sgld(self):
        run = sgmcmc.run(preset="covtype-sgld", set={"model.n": 2000, "run.iterations": 100, "run.thin": 10,
                                                     "run.eval_every": 50},
                         chains=2, out=self.tmp / "covtype")
        self.assertEqual(run.manifest["model"]["name"], "logistic")
        self.assert_folder_consistent(run, chains=2, iterations=100, thin=10, eval_every=50)
        posterior = self.assert_export_round_trip(run, "covtype")
        dimension = run.manifest["model"]["dimension"]
        self.assertEqual(sum(posterior[v].size // (2 * 10) for v in posterior.data_vars), dimension)


class TestPmf(RunCase):
    def test_pmf_sgld(self):
        run = sgmcmc.run(preset="pmf-sgld", set={"model.users": 30, "model.items": 20, "model.ratings": 300,
                                                  "model.rank": 3, "estimator.batch_size": 50, "run.iterations": 40,
                                                  "run.thin": 10, "run.eval_every": 20}, out=self.tmp / "pmf")
        self.assertEqual(run.manifest["model"]["name"], "pmf")
        self.assert_folder_consistent(run, chains=1, iterations=40, thin=10, eval_every=20)
        posterior = self.assert_export_round_trip(run, "pmf")
        # U.<user>.<k>: users × rank, the coordinates are the user ids and 1..rank
        users = list(dict.fromkeys(int(name.split(".")[1]) for name in run.parameter_names if name.startswith("U.")))
        self.assertEqual(posterior["U"].dims, ("chain", "draw", "U_dim_0", "U_dim_1"))
        self.assertEqual(posterior["U_dim_0"].values.tolist(), users)
        self.assertEqual(posterior["U_dim_1"].values.tolist(), [1, 2, 3])
        self.assertEqual(posterior["U"].shape, (1, 4, len(users), 3))


class TestLda(RunCase):
    def test_lda_sgld(self):
        run = sgmcmc.run(preset="lda-sgld", set={"model.topics": 4, "model.true_topics": 3, "model.docs": 60,
                                                  "model.words": 25, "estimator.batch_size": 10, "run.iterations": 20,
                                                  "run.thin": 5, "run.eval_every": 10}, out=self.tmp / "lda")
        self.assertEqual(run.manifest["model"]["name"], "lda")
        self.assertEqual(len(run.parameter_names), 4 * 25)
        self.assert_folder_consistent(run, chains=1, iterations=20, thin=5, eval_every=10)
        posterior = self.assert_export_round_trip(run, "lda")
        self.assertEqual(posterior["theta"].shape, (1, 4, 4, 25))
        self.assertTrue((posterior["theta"].values > 0).all())  # lda's parameters are positive


class TestErrors(RunCase):
    """A missing or partial folder names the file; a failing CLI raises CliError."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.good = cls.tmp / "good"
        sgmcmc.run(preset="demo", set={"run.iterations": 20, "run.warmup": 0, "run.thin": 2, "run.eval_every": 10,
                                        "output.gradients": "exact"}, chains=2, out=cls.good)

    def broken_copy(self, name):
        folder = self.tmp / name
        shutil.copytree(self.good, folder)
        return folder

    def assert_error_names(self, folder, file_name):
        with self.assertRaises(sgmcmc.RunFolderError) as caught:
            sgmcmc.read_run(folder)
        self.assertIn(file_name, str(caught.exception))
        self.assertEqual(caught.exception.path.name, file_name)
        return str(caught.exception)

    def test_good_folder_reads(self):
        run = sgmcmc.read_run(self.good)
        self.assertEqual(run.num_draws, [10, 10])

    def test_no_folder(self):
        with self.assertRaises(sgmcmc.RunFolderError) as caught:
            sgmcmc.read_run(self.tmp / "absent")
        self.assertIn("absent", str(caught.exception))

    def test_missing_manifest(self):
        folder = self.broken_copy("no-manifest")
        (folder / "manifest.json").unlink()
        self.assertIn("interrupted", self.assert_error_names(folder, "manifest.json"))

    def test_missing_chain(self):
        folder = self.broken_copy("no-chain-2")
        (folder / "chain-2.csv").unlink()
        self.assert_error_names(folder, "chain-2.csv")

    def test_truncated_chain(self):
        folder = self.broken_copy("truncated")
        text = (folder / "chain-1.csv").read_text()
        # Cut inside the last row (the Elapsed Time comment lines after it go too).
        (folder / "chain-1.csv").write_text(text[: text.rfind(",")])
        message = self.assert_error_names(folder, "chain-1.csv")
        last_row = max(k for k, line in enumerate(text.split("\n"), 1) if line and not line.startswith("#"))
        self.assertIn(f"chain-1.csv:{last_row}:", message)

    def test_missing_metrics(self):
        folder = self.broken_copy("no-metrics")
        (folder / "metrics.csv").unlink()
        self.assert_error_names(folder, "metrics.csv")

    def test_missing_gradients(self):
        folder = self.broken_copy("no-gradients")
        (folder / "gradients-2.csv").unlink()
        self.assert_error_names(folder, "gradients-2.csv")

    def test_short_gradients(self):
        folder = self.broken_copy("short-gradients")
        path = folder / "gradients-1.csv"
        path.write_text("\n".join(path.read_text().rstrip("\n").split("\n")[:-1]) + "\n")
        self.assert_error_names(folder, "gradients-1.csv")

    def test_bad_manifest(self):
        folder = self.broken_copy("bad-manifest")
        (folder / "manifest.json").write_text("{\"config\": ")
        self.assert_error_names(folder, "manifest.json")

    def test_cli_error_carries_stderr_and_exit_code(self):
        with self.assertRaises(sgmcmc.CliError) as caught:
            sgmcmc.run(preset="demo", set={"run.iteratoins": 10}, out=self.tmp / "misspelt")
        error = caught.exception
        self.assertEqual(error.returncode, 2)
        self.assertIn("iteratoins", error.stderr)
        self.assertIn("iteratoins", str(error))
        self.assertIn("code 2", str(error))
        with self.assertRaises(sgmcmc.CliError) as caught:
            sgmcmc.run(preset="no-such-preset", out=self.tmp / "no-preset")
        self.assertIn("no-such-preset", caught.exception.stderr)
        with self.assertRaises(sgmcmc.CliError) as caught:  # no out: the empty temporary folder goes
            sgmcmc.run(preset="demo", set={"run.iteratoins": 10})
        self.assertIsNone(caught.exception.out)

    def test_diverged_run_raises_and_keeps_its_draws(self):
        out = self.tmp / "diverged"
        with self.assertRaises(sgmcmc.CliError) as caught:
            sgmcmc.run(preset="demo", set={"run.iterations": 100, "run.warmup": 0, "integrator.step_size": 1.0},
                       chains=2, out=out)
        self.assertEqual(caught.exception.returncode, 1)
        self.assertIn("diverged", caught.exception.stderr)
        self.assertEqual(caught.exception.out, out)
        run = sgmcmc.read_run(out)
        self.assertEqual(run.status, "diverged")
        for k, entry in zip(run.chain_ids, run.manifest["chains"]):
            self.assertEqual(entry["status"], "diverged")
            # the draws kept are those of the iterations before it diverged, every thin-th
            self.assertEqual(run.num_draws[k - 1], entry["iterations"] // 5)
            self.assert_same_as_text(run.chains[k - 1], out / f"chain-{k}.csv")

    def test_find_cli(self):
        self.assertEqual(Path(sgmcmc.find_cli()).resolve(), Path(os.environ["SGMCMC_CLI"]).resolve())
        with self.assertRaises(FileNotFoundError):
            sgmcmc.find_cli(str(self.tmp / "no-such-cli"))
        saved = os.environ.pop("SGMCMC_CLI")
        saved_path = os.environ.get("PATH", "")
        try:
            os.environ["PATH"] = str(self.tmp)
            with self.assertRaises(FileNotFoundError) as caught:
                sgmcmc.find_cli()
            self.assertIn("SGMCMC_CLI", str(caught.exception))
            os.environ["PATH"] = str(Path(saved).parent)
            self.assertEqual(Path(sgmcmc.find_cli()).resolve(), Path(saved).resolve())
        finally:
            os.environ["SGMCMC_CLI"] = saved
            os.environ["PATH"] = saved_path

    def test_set_values(self):
        self.assertEqual(_toml_value(True), "true")
        self.assertEqual(_toml_value(500), "500")
        self.assertEqual(_toml_value(2e-5), "2e-05")
        self.assertEqual(_toml_value("1"), '"1"')
        self.assertEqual(_toml_value('a "b"'), "'a \"b\"'")
        with self.assertRaises(ValueError):
            sgmcmc.run(preset="demo", config="x.toml")


if __name__ == "__main__":
    unittest.main()

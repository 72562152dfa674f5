"""posteriordb posteriors that glm cannot express, each a plugin project written with the autodiff
SDK (tests/posteriordb/models/<name>/), built against the installed SDK as a user builds it, run
by the installed CLI with the project's config.toml (MALA + MH, exact gradients), and held to
compare.py's criterion against the vendored reference summaries (models/reference_summaries.json):
every mean and sd within 4 combined MCSE. Under an exact sampler each of those statistics is about
standard normal, so a false alarm somewhere among the 2 × 26 has probability about 0.3%
(52 × 6.3e-5); the seeds are fixed, so the outcome is too.

The models: eight_schools-eight_schools_noncentered (τ > 0 sampled as log τ, its Jacobian in
the prior; θ_j = μ + τ θ̃_j as quantities), arK-arK (σ > 0 as log σ),
low_dim_gauss_mix-low_dim_gauss_mix (an ordered pair μ₁ < μ₂, two σ > 0, a weight in (0, 1) by
the logit; names.csv maps it back with compare.py's `inv_logit`) and garch-garch11 (flat priors
on α₀ > 0, 0 < α₁ < 1 and 0 < β₁ < 1 - α₁, a bound that is itself a parameter: the prior is the
Jacobian alone; the series is one item, each σ_t depending on the whole past).

Run by ctest (tests/CMakeLists.txt sets SGMCMC_CMAKE and SGMCMC_BUILD_DIR, the build tree to
install), or by hand from tests/posteriordb:
    SGMCMC_CMAKE=cmake SGMCMC_BUILD_DIR=build/release python3 -m unittest -v test_sdk_models
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = HERE / "models"
COMPARE = HERE.parents[1] / "runners" / "posteriordb" / "compare.py"
POSTERIORS = {  # posteriordb's name: the project's folder (vendor.py's SDK_POSTERIORS)
    "eight_schools-eight_schools_noncentered": "eight_schools_noncentered",
    "arK-arK": "arK",
    "low_dim_gauss_mix-low_dim_gauss_mix": "low_dim_gauss_mix",
    "garch-garch11": "garch11",
}


def step(arguments, cwd=None):
    result = subprocess.run(arguments, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, arguments))} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


class TestSdkModels(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="sgmcmc-posteriordb-sdk-"))
        self.cmake = os.environ.get("SGMCMC_CMAKE", "cmake")
        self.prefix = self.tmp / "prefix"
        step([self.cmake, "--install", os.environ["SGMCMC_BUILD_DIR"], "--prefix", self.prefix])

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def build(self, folder):
        """A copy of the project (as a user has it: no build folder), configured with only the
        installed package on its paths, then built."""
        project = self.tmp / folder
        shutil.copytree(MODELS / folder, project, ignore=shutil.ignore_patterns("build"))
        step([self.cmake, "--preset", "release", f"-DCMAKE_PREFIX_PATH={self.prefix}"], cwd=project)
        return project

    def test_each_posterior_holds(self):
        started = time.monotonic()
        projects = {posterior: self.build(folder) for posterior, folder in POSTERIORS.items()}
        # The three builds side by side: each compiles one source against Stan Math's headers.
        builds = [subprocess.Popen([self.cmake, "--build", "--preset", "release"], cwd=project,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                  for project in projects.values()]
        for build, project in zip(builds, projects.values()):
            output = build.communicate()[0]
            self.assertEqual(build.returncode, 0, f"{project}: {output}")
        built = time.monotonic()
        cli = str(self.prefix / "bin" / "sgmcmc")
        failures = []
        for posterior, project in projects.items():
            with self.subTest(posterior=posterior):
                step([cli, "run", "--config", "config.toml", "--plugin-dir", "build/plugins", "--out", "run", "--quiet"],
                     cwd=project)
                result = subprocess.run([sys.executable, str(COMPARE), str(project / "run"), "--posteriordb", str(HERE),
                                         "--posterior", posterior, "--names", str(project / "names.csv"),
                                         "--summaries", str(MODELS / "reference_summaries.json")],
                                        capture_output=True, text=True)
                print(result.stdout, file=sys.stderr)
                self.assertIn(result.returncode, (0, 1), result.stderr)
                if result.returncode != 0:
                    failures.append(result.stdout)
        print(f"install and build {built - started:.0f} s, runs and comparisons {time.monotonic() - built:.0f} s",
              file=sys.stderr)
        self.assertEqual(failures, [], "\n".join(failures))
        self.check_bad_data(cli, projects["eight_schools-eight_schools_noncentered"])

    def check_bad_data(self, cli, project):
        """sgmcmc::JsonData's errors: exit 2, naming the file and the key and what was expected."""
        cases = {
            '{"J": 8, "y": [28, 8, -3, 7, -1, 1, 18, 12]}': "`sigma`: no such key",
            '{"J": 8, "y": [28, 8, -3, 7, -1, 1, 18], "sigma": [1, 1, 1, 1, 1, 1, 1, 1]}': "`y`: expected 8 numbers, found 7",
            '{"J": 8.5, "y": [], "sigma": []}': "`J`: expected an integer >= 0, found 8.5",
            '{"J": 1, "y": ["28"], "sigma": [1]}': "`y`[0]: expected a number, found string",
            '{"J": 1, "y": [28], ': "not JSON",
        }
        for case, (text, expected) in enumerate(cases.items()):
            with self.subTest(data=text):
                (project / "bad.json").write_text(text)
                result = subprocess.run([cli, "run", "--config", "config.toml", "--plugin-dir", "build/plugins", "--quiet",
                                         "--set", "model.data=bad.json", "--out", f"bad-run-{case}"], cwd=project,
                                        capture_output=True, text=True)
                self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                self.assertIn("bad.json", result.stderr)
                self.assertIn(expected, result.stderr)


if __name__ == "__main__":
    unittest.main()

"""sgmcmc from Python: run the CLI, read its output folders, export them for ArviZ.

    import sgmcmc
    run = sgmcmc.run(preset="demo", set={"run.iterations": 500}, seed=1, chains=2)
    run.chains[0]              # chain 1's draws (pandas DataFrame, the CSV's columns)
    run.draws_array()          # (chains, draws, columns) NumPy array
    sgmcmc.to_netcdf(run, "demo.nc")   # ArviZ layout: arviz.from_netcdf("demo.nc")

See runners/python/README.md.
"""

from .export import open_netcdf, to_inference_data_groups, to_netcdf
from .read import Run, RunFolderError, read_manifest, read_metrics, read_run, read_stan_csv
from .run import CliError, find_cli, run

__all__ = [
    "CliError", "Run", "RunFolderError", "find_cli", "open_netcdf", "read_manifest", "read_metrics", "read_run",
    "read_stan_csv", "run", "to_inference_data_groups", "to_netcdf",
]

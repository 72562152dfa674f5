"""A run as ArviZ InferenceData groups (xarray Datasets) and as a netCDF file with groups that
``arviz.from_netcdf`` opens.

Conventions followed (ArviZ's InferenceData schema, and what ``arviz.from_cmdstan`` makes of a
Stan CSV):

- groups ``posterior`` and ``sample_stats``, each a Dataset with leading dims ``chain``, ``draw``
  (coordinates: the chain numbers k of ``chain-<k>.csv``, and 0, 1, ... for draws);
- ``posterior``: one variable per parameter base name, as from_cmdstan groups Stan's ``beta.1``,
  ``beta.2`` into ``beta``: the part before the first ``.`` names the variable, each further
  ``.``-separated index one dim ``<name>_dim_<i>``. Unlike from_cmdstan's 0, 1, ... the
  coordinates are the labels of the columns (``beta_dim_0`` = 1..d, pmf's ``U_dim_0`` = user
  ids), so ``posterior.beta.sel(beta_dim_0=1)`` is column ``beta.1``; a name without index is a
  scalar variable. The model's quantities (``held_out_log_density``) are posterior variables
  too, as from_cmdstanpy does with generated quantities. Names whose indices do not fill a
  rectangle get one dim ``<name>_dim_0`` with the index text ("3.2") as coordinate;
- ``sample_stats``: ``lp`` (``lp__``), ``acceptance_rate`` (``accept_stat__``), ``step_size``
  (``stepsize__``), ArviZ's names for Stan's columns;
- an extra group ``gradients`` when the run recorded them (``gradients-<k>.csv``): the same
  variables and dims as ``posterior``'s parameters, ∂lp__/∂θ at each draw. It is outside
  ArviZ's schema: ``arviz.from_netcdf`` loads it with a warning that the group is not defined;
- ``attrs`` on every group: ``created_at``, ``inference_library`` = "sgmcmc",
  ``inference_library_version``, and the model, source and seed.

No ``log_likelihood`` or ``observed_data`` groups: the CLI writes neither pointwise
log-likelihoods nor the data.
"""

from __future__ import annotations

import datetime
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

with warnings.catch_warnings():  # Debian 12's netCDF4 (cftime) warns that numpy's ndarray size changed: harmless
    warnings.filterwarnings("ignore", message="numpy.ndarray size changed")
    import netCDF4

from .read import Run

#: Stan's sampler columns and ArviZ's names for them.
SAMPLE_STATS_NAMES = {"lp__": "lp", "accept_stat__": "acceptance_rate", "stepsize__": "step_size",
                      "delta_energy__": "energy_error", "accepted__": "accepted"}
#: The groups to_netcdf writes, in order.
GROUPS = ("posterior", "sample_stats", "gradients")


def _parse_index(text: str):
    return int(text) if text.isdigit() else text


def group_columns(names: list[str]) -> list[tuple[str, list[str], dict[str, list], list[tuple[int, tuple]]]]:
    """Groups column names by base name: ``[(variable, dims, coords, members)]`` where each member
    is ``(j, where)``: column ``names[j]`` sits at coordinates ``where`` (one label per dim).
    Keeps the order of first appearance, of variables and of labels."""
    by_base: dict[str, list[tuple[int, list[str]]]] = {}
    for j, name in enumerate(names):
        base, *indices = name.split(".")
        by_base.setdefault(base, []).append((j, indices))
    groups = []
    for base, members in by_base.items():
        ranks = {len(indices) for _, indices in members}
        if ranks == {0} and len(members) == 1:
            groups.append((base, [], {}, [(members[0][0], ())]))
            continue
        if len(ranks) == 1 and 0 not in ranks:
            rank = ranks.pop()
            tuples = [tuple(_parse_index(x) for x in indices) for _, indices in members]
            for i in range(rank):  # a dim whose labels are not all numbers has text labels
                if not all(isinstance(t[i], int) for t in tuples):
                    tuples = [t[:i] + (str(t[i]),) + t[i + 1:] for t in tuples]
            labels = [list(dict.fromkeys(t[i] for t in tuples)) for i in range(rank)]
            if int(np.prod([len(l) for l in labels])) == len(members) and len(set(tuples)) == len(members):
                dims = [f"{base}_dim_{i}" for i in range(rank)]
                groups.append((base, dims, dict(zip(dims, labels)), [(j, t) for (j, _), t in zip(members, tuples)]))
                continue
        # Ragged or mixed: one dim whose coordinate is the whole index text.
        dim = f"{base}_dim_0"
        labels = [".".join(indices) for _, indices in members]
        groups.append((base, [dim], {dim: labels}, [(j, (label,)) for (j, _), label in zip(members, labels)]))
    return groups


def _coordinate(labels: list) -> np.ndarray:
    if all(isinstance(label, int) for label in labels):
        return np.asarray(labels, dtype=np.int64)
    return np.asarray([str(label) for label in labels], dtype=object)


def _dataset(values: np.ndarray, names: list[str], chain_ids: list[int], attrs: dict) -> xr.Dataset:
    """values: (chains, draws, len(names)) → a Dataset with one variable per base name."""
    chains, draws, _ = values.shape
    coords = {"chain": np.asarray(chain_ids, dtype=np.int64), "draw": np.arange(draws, dtype=np.int64)}
    variables = {}
    for base, dims, labels, members in group_columns(names):
        index_of = [{label: i for i, label in enumerate(labels[d])} for d in dims]
        array = np.full((chains, draws, *(len(labels[d]) for d in dims)), np.nan)
        for j, where in members:
            at = tuple(index_of[i][x] for i, x in enumerate(where))
            array[(slice(None), slice(None), *at)] = values[:, :, j]
        variables[base] = (["chain", "draw", *dims], array)
        coords.update({d: _coordinate(labels[d]) for d in dims})
    return xr.Dataset(variables, coords=coords, attrs=attrs)


def _attrs(run: Run) -> dict:
    manifest = run.manifest
    return {
        "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "inference_library": "sgmcmc",
        "inference_library_version": str(manifest.get("sgmcmc_version", "")),
        "sgmcmc_model": str(manifest.get("model", {}).get("name", "")),
        "sgmcmc_source": str(manifest.get("source", "")),
        "sgmcmc_seed": int(manifest.get("seed", 0)),
        "sgmcmc_status": str(manifest.get("status", "")),
    }


def to_inference_data_groups(run: Run, gradients: bool = True) -> dict[str, xr.Dataset]:
    """The run as ``{"posterior": Dataset, "sample_stats": Dataset[, "gradients": Dataset]}``
    (``arviz.InferenceData(**groups)`` makes an InferenceData of it). The chains must have equal
    numbers of draws (a diverged chain stops early: export the others from a Run you trim)."""
    attrs = _attrs(run)
    values = run.draws_array()
    columns = run.columns
    chain_ids = run.chain_ids
    stat_columns = run.stat_columns
    variables = columns[len(stat_columns):]
    groups = {"posterior": _dataset(values[:, :, len(stat_columns):], variables, chain_ids, attrs)}
    stats = xr.Dataset(
        {SAMPLE_STATS_NAMES[name]: (["chain", "draw"], values[:, :, j]) for j, name in enumerate(stat_columns)},
        coords={"chain": np.asarray(chain_ids, dtype=np.int64), "draw": np.arange(values.shape[1], dtype=np.int64)},
        attrs=attrs)
    groups["sample_stats"] = stats
    if gradients and run.gradients is not None:
        groups["gradients"] = _dataset(run.gradients_array(), run.parameter_names, chain_ids, attrs)
    return groups


def to_netcdf(run: Run, path, gradients: bool = True) -> Path:
    """Writes the run as a netCDF-4 file with one group per InferenceData group (engine
    netCDF4), the layout ``arviz.from_netcdf(path)`` opens. Returns the path."""
    path = Path(path)
    groups = to_inference_data_groups(run, gradients=gradients)
    mode = "w"
    for name, dataset in groups.items():
        dataset.to_netcdf(path, mode=mode, group=name, engine="netcdf4")
        mode = "a"
    return path


def open_netcdf(path) -> dict[str, xr.Dataset]:
    """Reads back every group that :func:`to_netcdf` wrote (without ArviZ), loaded into memory."""
    with netCDF4.Dataset(path) as root:
        names = list(root.groups)
    out = {}
    for name in names:
        with xr.open_dataset(path, group=name, engine="netcdf4") as dataset:
            out[name] = dataset.load()
    return out

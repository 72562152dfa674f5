#!/usr/bin/env python3
"""Regenerate this folder's copy of posteriordb from a checkout of it (stan-dev/posteriordb, BSD-3).

    tests/posteriordb/vendor.py --posteriordb DIR

Copies, unchanged, for every posterior in POSTERIORS: its posteriors/<name>.json, its Stan model
and its data zip into tests/posteriordb/posterior_database/ (the checkout's layout, so that
runners/posteriordb/convert.py and compare.py read it as a checkout), the reference draws of
DRAWS_VENDORED, posteriordb's LICENCE.md, and writes reference_summaries.json: per posterior and
parameter the reference draws' mean and sd, their MCSEs as compare.py computes them (batch means),
and the bulk ESS posteriordb's info file reports; `compare.py --summaries` reads it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

# The linear regressions with flat priors on their coefficients (test_posteriordb.py's
# least-squares check; the end-to-end test compares with mesquite-logmesquite_logvolume's draws),
# sblri-blr and sblrc-blr (normal priors; blr is the Stan model the refusal test changes),
# kilpisjarvi_mod-kilpisjarvi and diamonds-diamonds (informative normal priors: the posteriors a
# wrong prior scale moves, tests/posteriordb/README.md).
POSTERIORS = [
    "earnings-earn_height", "earnings-log10earn_height", "earnings-logearn_height", "earnings-logearn_height_male",
    "earnings-logearn_interaction", "earnings-logearn_interaction_z", "earnings-logearn_logheight_male",
    "kidiq-kidscore_interaction", "kidiq-kidscore_momhs", "kidiq-kidscore_momhsiq", "kidiq-kidscore_momiq",
    "kidiq_with_mom_work-kidscore_interaction_c", "kidiq_with_mom_work-kidscore_interaction_c2",
    "kidiq_with_mom_work-kidscore_interaction_z", "kidiq_with_mom_work-kidscore_mom_work",
    "mesquite-logmesquite", "mesquite-logmesquite_logva", "mesquite-logmesquite_logvas", "mesquite-logmesquite_logvash",
    "mesquite-logmesquite_logvolume", "mesquite-mesquite",
    "nes1972-nes", "nes1976-nes", "nes1980-nes", "nes1984-nes", "nes1988-nes", "nes1992-nes", "nes1996-nes", "nes2000-nes",
    "sblri-blr", "sblrc-blr", "kilpisjarvi_mod-kilpisjarvi", "diamonds-diamonds",
]
DRAWS_VENDORED = ["mesquite-logmesquite_logvolume"]  # 243 KB: the only reference draws kept whole
# Posteriors glm cannot express, each a plugin project written with the autodiff SDK in
# models/<folder>/ (test_sdk_models.py): their data unzipped there as data.json, the JSON the
# plugin reads, and their summaries in models/reference_summaries.json.
SDK_POSTERIORS = {
    "eight_schools-eight_schools_noncentered": "eight_schools_noncentered",
    "arK-arK": "arK",
    "low_dim_gauss_mix-low_dim_gauss_mix": "low_dim_gauss_mix",
    "garch-garch11": "garch11",
}


def copy(source_root: Path, relative: str) -> None:
    target = HERE / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source_root / relative, target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posteriordb", required=True, type=Path, help="a posteriordb checkout (holds posterior_database/)")
    root = parser.parse_args().posteriordb
    sys.path.insert(0, str(HERE.parents[1] / "runners" / "posteriordb"))
    from convert import read_json
    from compare import summarise

    shutil.copyfile(root / "LICENCE.md", HERE / "LICENCE.md")

    def vendor(posterior):
        """Copies the posterior's files and returns its reference summaries."""
        info = read_json(root / "posterior_database" / "posteriors" / f"{posterior}.json")
        copy(root, f"posterior_database/posteriors/{posterior}.json")
        copy(root, f"posterior_database/models/stan/{info['model_name']}.stan")
        copy(root, f"posterior_database/data/data/{info['data_name']}.json.zip")
        reference = info["reference_posterior_name"]
        draws_path = f"posterior_database/reference_posteriors/draws/draws/{reference}.json.zip"
        if posterior in DRAWS_VENDORED:
            copy(root, draws_path)
        chains = read_json(root / draws_path)
        diagnostics = read_json(root / "posterior_database" / "reference_posteriors" / "draws" / "info" /
                                f"{reference}.info.json")["diagnostics"]
        ess = dict(zip(diagnostics["diagnostic_information"]["names"], diagnostics["effective_sample_size_bulk"]))
        summaries = {}
        for parameter in chains[0]:
            reference = summarise([np.asarray(chain[parameter], dtype=float) for chain in chains], parameter)
            summaries[parameter] = {"mean": reference.mean, "sd": reference.sd, "mcse_mean": reference.mcse_mean,
                                    "mcse_sd": reference.mcse_sd, "ess_bulk": float(ess[parameter])}
        return summaries

    summaries = {posterior: vendor(posterior) for posterior in POSTERIORS}
    (HERE / "reference_summaries.json").write_text(json.dumps(summaries, indent=1) + "\n")
    sdk_summaries = {}
    for posterior, folder in SDK_POSTERIORS.items():
        sdk_summaries[posterior] = vendor(posterior)
        data_name = read_json(root / "posterior_database" / "posteriors" / f"{posterior}.json")["data_name"]
        with zipfile.ZipFile(root / "posterior_database" / "data" / "data" / f"{data_name}.json.zip") as archive:
            (HERE / "models" / folder / "data.json").write_bytes(archive.read(f"{data_name}.json"))  # unchanged
    (HERE / "models" / "reference_summaries.json").write_text(json.dumps(sdk_summaries, indent=1) + "\n")
    print(f"{HERE}: {len(POSTERIORS)} + {len(SDK_POSTERIORS)} posteriors, reference draws of {', '.join(DRAWS_VENDORED)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

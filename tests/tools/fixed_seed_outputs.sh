#!/usr/bin/env bash
# Fingerprints of fixed-seed outputs, for refactors that must not change behaviour:
#
#   tests/tools/fixed_seed_outputs.sh BUILD/bin/sgmcmc OUT > before.md5   # on the old build
#   tests/tools/fixed_seed_outputs.sh BUILD/bin/sgmcmc OUT2 > after.md5   # on the new one
#   diff before.md5 after.md5                                              # nothing: the same outputs
#
# Runs every preset with short settings (2 chains, checkpoints), the demo model under every
# estimator × integrator × corrector pair (refused pairs leave only their log), recorded gradients
# from each source, a 12-cell sweep, `summary` and `zv`; then prints one MD5 per output file. What
# differs between any two runs is left out: the clock readings (wall and CPU seconds, start and
# end times) of metrics.csv, the sweep's tables and manifests, the sweep's concurrent_cells, the
# manifests' timings, plugin path and thread count, and the Elapsed Time lines of chain files.
set -uo pipefail
cli=$(realpath "$1")
out=$2
rm -rf "$out" && mkdir -p "$out"
short=(--set run.warmup=100 --set run.iterations=300 --set run.eval_every=50)

for preset in $("$cli" presets | awk '{print $1}'); do
  extra=()  # cyclical presets: cycles short enough that 300 iterations keep some cycle ends
  [[ $preset == *csgld ]] && extra=(--set integrator.cycle_length=100)
  "$cli" run --preset $preset "${short[@]}" "${extra[@]}" --set run.chains=2 --seed 7 --out "$out/$preset" --quiet \
    --checkpoint-every 100 > "$out/$preset.log" 2>&1 || echo "failed: $preset" >&2
done
for pair in "sgld none" "mala mh" "obabo mh" "baoab mh" "hmc mh" "sghmc none" "obabo none" "baoab none" \
            "mala none" "hmc none" "psgld none" "sgnht none" "badodab none"; do
  read -r integrator corrector <<< "$pair"
  for estimator in minibatch cv svrg saga exact; do
    name="c-$integrator-$corrector-$estimator"
    "$cli" run --preset demo "${short[@]}" --set integrator.name=$integrator --set corrector.name=$corrector \
      --set estimator.name=$estimator --set run.chains=2 --seed 3 --out "$out/$name" --quiet > "$out/$name.log" 2>&1
  done
done
for source in cv exact estimator; do
  "$cli" run --preset gaussian-sgld-cv "${short[@]}" --set output.gradients=$source --set output.zv=true --seed 5 \
    --out "$out/g-$source" > "$out/g-$source.log" 2>&1 || echo "failed: gradients $source" >&2
done
"$cli" run --preset pmf-saga "${short[@]}" --set output.gradients=cv --seed 5 --out "$out/g-pmf" --quiet \
  > "$out/g-pmf.log" 2>&1 || echo "failed: gradients pmf" >&2
cat > "$out/sweep.toml" <<'TOML'
preset = "demo"
[base.run]
iterations = 300
warmup = 100
chains = 2
[axes]
"estimator.name" = ["minibatch", "cv", "saga"]
"integrator.name" = ["sgld", "obabo"]
"run.seed" = [1, 2]
TOML
# From inside $out: the sweep file's path is written into the cells' comment lines.
(cd "$out" && "$cli" sweep sweep.toml --out sweep --jobs 2 > sweep.log 2>&1) || echo "failed: sweep" >&2
"$cli" summary "$out/demo" > "$out/demo-summary.txt" 2>&1
"$cli" zv "$out/g-cv" > "$out/g-cv-zv.txt" 2>&1

cd "$out" && find . -type f ! -name '*.log' | LC_ALL=C sort | while read -r file; do
  python3 - "$file" <<'PY'
import csv, hashlib, json, re, sys
path = sys.argv[1]
# Clock readings, which differ between any two runs (wall and CPU seconds, start and end times),
# and how many sweep cells happened to run at once.
TIMES = {"seconds", "cpu_seconds", "total_seconds", "model_seconds", "started", "finished", "concurrent_cells"}
name = path.rsplit("/", 1)[-1]
text = open(path, "rb").read()
if name in ("metrics.csv", "results.csv", "summary.csv"):
    rows = list(csv.reader(text.decode().splitlines()))
    drop = {i for i, column in enumerate(rows[0]) if column in TIMES} if rows else set()
    text = repr([[c for i, c in enumerate(row) if i not in drop] for row in rows]).encode()
elif name == "manifest.json":
    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in TIMES | {"timings", "plugin", "threads"}}
        return [strip(v) for v in x] if isinstance(x, list) else x
    text = json.dumps(strip(json.loads(text)), sort_keys=True).encode()
elif re.fullmatch(r"chain-\d+\.csv", name):
    text = text.split(b"# \n#  Elapsed Time:")[0]
print(hashlib.md5(text).hexdigest(), path)
PY
done

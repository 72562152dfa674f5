#!/usr/bin/env bash
# Installs what sgmcmc needs to build, then (if given arguments) runs the pinned CMake with them.
#
#   third_party/setup.sh                              # install only
#   third_party/setup.sh --workflow --preset demo     # install, build Release, reproduce Baker et al. (2019)'s Figure 1
#   third_party/setup.sh --workflow --preset test     # install, build, run the test suite (ctest)
#
# Idempotent and quick when nothing is missing: it asks dpkg which packages are absent and
# runs apt-get only for those, and runs `npm ci` only when the pinned CMake is not in the tree.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# Debian 12 packages. clang-19 builds C++20 named modules; libclang-rt-19-dev holds the
# sanitizer runtimes for the `asan` preset, and llvm-19 the llvm-symbolizer-19 that Debian's
# runtime runs to name the functions of a report (without it: bare addresses, which LeakSanitizer
# suppressions by function name cannot match); clang-tools-19 has clang-scan-deps-19, which CMake
# runs to order module builds; Debian's own cmake (3.25) is too old, see below. Debian's python3
# with python3-matplotlib runs the figure scripts of runners/figures (the demo among them) and
# `sgmcmc plot`; python3-numpy, python3-pandas, python3-xarray and python3-netcdf4 run the Python
# package of runners/python (read a run folder, export to netCDF) and its tests. R with rstan,
# posterior and bayesplot runs the test that Stan's R readers open our chains
# (tests/e2e/read_with_rstan.R); r-cran-codetools silences rstan's notes at start-up; r-cran-jsonlite reads
# posteriordb's data for runners/posteriordb/nuts_reference.R. OpenMPI
# (libopenmpi-dev to build, openmpi-bin for mpirun) runs sweeps across processes and machines:
# `mpirun -n P sgmcmc sweep FILE`. Stan Math's headers (r-cran-stanheaders) and Eigen
# (libeigen3-dev) build plugins that derive their gradients with sgmcmc/autodiff.hpp. libxxhash-dev hashes the data
# files a run names (XXH64), so that --resume sees when they changed.
debian_packages=(
  clang-19 clang-tools-19 libclang-rt-19-dev llvm-19 ninja-build
  libboost-dev libfmt-dev xtensor-dev libxtensor-blas-dev libopenblas-dev
  catch2 libbenchmark-dev libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libpcg-cpp-dev zlib1g-dev libxxhash-dev
  python3-matplotlib python3-numpy python3-pandas python3-xarray python3-netcdf4
  r-base-core r-cran-rstan r-cran-posterior r-cran-bayesplot r-cran-codetools r-cran-jsonlite
  r-cran-stanheaders libeigen3-dev
  libopenmpi-dev openmpi-bin
)

# npm installs the pinned CMake; take Debian's only where no npm is on the machine (an npm from
# elsewhere conflicts with Debian's nodejs packages).
command -v npm >/dev/null || debian_packages+=(nodejs npm)

missing=()
for package in "${debian_packages[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)"
  [[ "$status" == installed ]] || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo=""
  if [[ $EUID -ne 0 ]]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# CMake >= 3.28 for FILE_SET CXX_MODULES, pinned by third_party/cmake/package-lock.json and
# installed inside the tree (git-ignored).
cmake="$here/cmake/node_modules/.bin/cmake"
if [[ ! -x "$cmake" ]]; then
  echo "setup: installing the pinned CMake (npm ci in third_party/cmake)"
  npm ci --prefix "$here/cmake" --no-audit --no-fund --loglevel=error
fi

if (($#)); then
  cd "$here/.."
  exec "$cmake" "$@"
fi

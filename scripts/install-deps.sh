#!/usr/bin/env bash
# Installs what microbatch needs to build, test and demo, from Debian 12
# packages only. Skips apt entirely when everything is already there.
set -euo pipefail

packages=(
  cmake g++ make                                    # build
  libhdf5-dev libcli11-dev nlohmann-json3-dev       # libraries
  libspdlog-dev libfmt-dev doctest-dev libxxhash-dev pkg-config
  libcurl4-openssl-dev                              # inputs named by URL (HTTP(S), S3)
  hdf5-tools hdf5-filter-plugin                     # h5diff/h5dump, plugin filters (lz4, bzip2)
  python3-h5py python3-numpy python3-pytest         # sample data and end-to-end tests
  python3-jsonschema                                # the --json outputs checked against docs/schema
  python3-xarray python3-netcdf4 python3-h5netcdf   # netCDF-4 inputs written and outputs read back (test_netcdf)
  python3-anndata python3-scipy python3-pandas python3-tables  # AnnData and pandas files (test_anndata, test_pandas)
  clang-14 libclang-rt-14-dev                       # sanitizer build and libFuzzer targets
  dpkg-dev file man-db                              # the Debian package (cpack, dpkg-shlibdeps) and its test
  slurm-wlm munge openmpi-bin libopenmpi-dev        # the Slurm tests' one-node cluster, srun --mpi=pmix, mpicc
  nginx-light openssl curl nodejs                   # remote inputs' servers (tests/e2e/servers.py): nginx, s3rver
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# s3rver (an S3 server that verifies Signature V4) for test_remote, from the npm
# registry at the version tests/e2e/s3/package-lock.json pins, with the machine's
# npm (it comes with its Node.js; Debian 12's own nodejs package has none).
s3_modules() {
  local dir
  dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/e2e/s3"
  [ -d "$dir/node_modules/@20minutes/s3rver" ] && return 0
  if ! command -v npm >/dev/null; then
    echo "install-deps: no npm: s3rver not installed, test_remote's S3 cases will fail" >&2
    return 0
  fi
  npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >/dev/null  # (it says node >= 24; it works on 20)
}

if [ ${#missing[@]} -eq 0 ]; then
  s3_modules
  exit 0
fi

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
s3_modules

#!/usr/bin/env bash
# Installs what microbatch needs, from Debian 12 packages only, by purpose:
#   scripts/install-deps.sh demo      build microbatch and run scripts/demo.sh
#   scripts/install-deps.sh package   build both binaries and their Debian packages
#   scripts/install-deps.sh test      all of the above and what the tests add (the default)
# Skips apt entirely when everything asked for is already there.
set -euo pipefail

# Building microbatch: the compiler, CMake and the libraries it links.
build=(
  cmake g++ make pkg-config
  libhdf5-dev libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libxxhash-dev
  libcurl4-openssl-dev                              # inputs named by URL (HTTP(S), S3)
  libssl-dev                                        # MD5 of uploads to S3 (Content-MD5, ETags)
)
mpi=(libopenmpi-dev openmpi-bin)                    # microbatch-mpi: mpi.h to build, mpirun to run
demo=(hdf5-tools)                                   # h5diff and h5dump, which scripts/demo.sh shows
package=(dpkg-dev file)                             # CPack's Debian packages: dpkg-shlibdeps for Depends
# What only the tests use, on top of all the above.
test=(
  doctest-dev                                       # the unit tests
  hdf5-filter-plugin                                # plugin filters (lz4, bzip2) in test inputs
  python3-h5py python3-numpy python3-pytest         # end-to-end tests
  python3-jsonschema                                # the --json outputs checked against docs/schema
  python3-hypothesis                                # the generated crossings suite (test_crossings*)
  python3-xarray python3-netcdf4 python3-h5netcdf   # netCDF-4 inputs written and outputs read back (test_netcdf)
  python3-anndata python3-scipy python3-pandas python3-tables  # AnnData and pandas files (test_anndata, test_pandas)
  clang-14 libclang-rt-14-dev                       # sanitizer build and libFuzzer targets
  man-db                                            # the installed package's man page, read back
  slurm-wlm munge                                   # the Slurm tests' one-node cluster
  nginx-light openssl curl nodejs                   # remote inputs' servers (tests/e2e/servers.py): nginx, s3rver
  awscli                                            # the AWS CLI, side by side with the credential chain (test_credentials)
  strace                                            # which process frees a replaced output (test_outputs)
  gcovr                                             # line and branch coverage (scripts/coverage.sh)
)

purpose=${1:-test}
case "$purpose" in
  demo) packages=("${build[@]}" "${demo[@]}") ;;
  package) packages=("${build[@]}" "${mpi[@]}" "${package[@]}") ;;
  test) packages=("${build[@]}" "${mpi[@]}" "${demo[@]}" "${package[@]}" "${test[@]}") ;;
  *) echo "usage: scripts/install-deps.sh [demo|package|test]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# s3rver (an S3 server that verifies Signature V4) for test_remote, and for the
# try-out server of examples/s3/ that test_readme runs, from the npm registry at
# the version each package-lock.json pins, with the machine's npm (it comes with
# its Node.js; Debian 12's own nodejs package has none).
s3_modules() {
  local root dir
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  for dir in "$root/tests/e2e/s3" "$root/examples/s3"; do
    [ -d "$dir/node_modules/@20minutes/s3rver" ] && continue
    if ! command -v npm >/dev/null; then
      echo "install-deps: no npm: s3rver not installed, the S3 cases of test_remote and test_readme will fail" >&2
      return 0
    fi
    npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >/dev/null  # (it says node >= 24; it works on 20)
  done
}

if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ "$purpose" = test ]; then s3_modules; fi

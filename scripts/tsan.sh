#!/usr/bin/env bash
# ThreadSanitizer run of the threaded and multi-process paths: the stall
# watchdog thread, the signal handlers and the crash guard (io/run/guard.cpp),
# split -j workers (io/run/workers.cpp) and the strings reader thread
# (io/transfer/strings.cpp). Builds microbatch with clang-14 and
# -DMB_TSAN=ON into build-tsan, then runs the end-to-end tests that exercise
# those paths against it. Any ThreadSanitizer report fails the run: the
# process exits 66 at the first report (the tests check exit codes), and
# every report is also kept in build-tsan/tsan-reports, which must stay empty
# (a report from a process a test kills, or whose status it does not check,
# still counts).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

CC=clang-14 CXX=clang++-14 cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMB_TSAN=ON >/dev/null
cmake --build build-tsan -j"$(nproc)" --target microbatch

reports=$root/build-tsan/tsan-reports
rm -rf "$reports"
mkdir -p "$reports"
# die_after_fork=0: a split -j worker is forked from a process that already
# runs the watchdog thread, and starts a watchdog of its own; ThreadSanitizer
# would end it instead ("starting new threads after multi-threaded fork is not
# supported"). That is safe here: the parent's watchdog holds no lock a worker
# needs (it takes the registry's mutex only to end the process) and glibc
# keeps malloc usable after fork().
options="halt_on_error=1:exitcode=66:die_after_fork=0:log_path=$reports/report"
[ -f tests/tsan.supp ] && options="$options:suppressions=$root/tests/tsan.supp"

# Two tests cannot work under ThreadSanitizer, for reasons that have nothing
# to do with races:
# - test_stop_signal_during_a_stuck_library_call: ThreadSanitizer delivers an
#   asynchronous signal only when the thread next enters one of its
#   interceptors or a blocking call, and libhdf5 loops on the corrupt heap
#   without calling any, so SIGTERM (and the grace alarm) are never handled:
#   the run hangs until the test's 30 s timeout. Left out.
# - test_library_crashes_and_hangs_on_corrupt_files_are_contained: libhdf5
#   memcpy()s from a corrupt heap address with a huge length; ThreadSanitizer's
#   memcpy interceptor first walks the shadow memory of the whole range, which
#   takes far longer than the test's --stall-timeout, so the stall watchdog
#   fires instead of the SIGSEGV the test expects. It runs on its own with
#   intercept_intrin=0 (memcpy, memset and memmove are not checked), as
#   test_reliability.py turns off ASan's intrinsics for the same inputs.
stuck=test_stop_signal_during_a_stuck_library_call
faults=test_library_crashes_and_hangs_on_corrupt_files_are_contained
e2e() {
  (cd tests/e2e && MICROBATCH=$root/build-tsan/microbatch /usr/bin/python3 -m pytest -q -p no:cacheprovider "$@")
}
status=0
TSAN_OPTIONS=$options e2e test_reliability.py test_jobs.py test_strings.py -k "not $stuck and not $faults" || status=$?
TSAN_OPTIONS=$options:intercept_intrin=0 e2e test_reliability.py -k "$faults" || status=$?

if compgen -G "$reports/report*" >/dev/null; then
  echo "ThreadSanitizer reports:"
  for r in "$reports"/report*; do echo "== $r"; sed -n '1,40p' "$r"; done
  exit 1
fi
exit "$status"

#!/usr/bin/env bash
# The pytest suite in two phases, as ./setup.sh test runs it:
#
#   1. parallel: the tests that time nothing, on five pytest-xdist workers (one file per worker at
#      a time, so a module's fixtures are built once). Five on two cores: these tests wait more than
#      they compute (runs of fixed seconds, servers starting, engines stopping, a lab partition
#      outlasting its timeout) — the suite used 1.05 of the 2 CPUs on two workers; on four its first
#      phase took 22 min instead of 30; with the lab and shape tests that wait, 12 min 28 s on five
#      against 12 min 53 s on four (one profiled run in it hung for 57 s: a like-for-like figure is owed);
#   2. serial:   the tests marked `alone` — they assert how long something took, measure a rate, or
#      load or watch the whole machine (processes, cgroups, namespaces) — one at a time, with
#      nothing of the suite beside them.
#
#   tests/run.sh                      # the whole suite
#   tests/run.sh --fast               # the fast subset: what tests/slow.txt does not list
#   tests/run.sh --durations=0 -x     # anything else is given to pytest in both phases
#   tests/run.sh tests/test_core.py   # (without a path: pyproject.toml's testpaths, tests/)
#
# Each phase's wall time and the total are printed at the end; the exit status is the first
# failing phase's (both phases always run). PYTHON names the interpreter (default .venv/bin/python),
# FBBENCH_TEST_WORKERS the first phase's workers (default 5).
set -uo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-.venv/bin/python}"
only=""  # a marker expression both phases also select by
if [ "${1:-}" = "--fast" ]; then
  only="not slow and "; shift
fi

clock() { date +%s.%N; }
took() { awk -v a="$1" -v b="$2" 'BEGIN { s = b - a; printf "%d min %04.1f s", s / 60, s - 60 * int(s / 60) }'; }

# Bytecode written once for the hundreds of fbbench processes the suite starts: where
# PYTHONDONTWRITEBYTECODE is set, each would otherwise compile what changed since (setup.sh does it too).
"$python" -m compileall -q fbbench tests >/dev/null

# Fixtures both phases use are built once, in the first (tests/conftest.py built_once).
FBBENCH_TEST_SHARED="$(mktemp -d "${TMPDIR:-/tmp}/fbbench-tests-shared.XXXXXX")"
export FBBENCH_TEST_SHARED
trap 'rm -rf "$FBBENCH_TEST_SHARED"' EXIT

start=$(clock)
workers="${FBBENCH_TEST_WORKERS:-5}"
printf '\033[1m==> tests, phase 1 of 2: in parallel on %s workers (not alone)\033[0m\n' "$workers"
# --no-loadscope-reorder: hand out the files in the order tests/conftest.py sorts them (the longest
# first, from tests/slow.txt). By default pytest-xdist (3.5 on) hands them out by their number of
# tests, and test_lab.py (few tests, minutes of waiting) started late and ran on at the end.
"$python" -m pytest -q -ra -n "$workers" --dist loadfile --no-loadscope-reorder -m "${only}not alone" "$@"
parallel=$?
middle=$(clock)
printf '\033[1m==> tests, phase 2 of 2: one at a time (alone)\033[0m\n'
"$python" -m pytest -q -ra -m "${only}alone" "$@"
serial=$?
end=$(clock)

# Exit 5 is pytest's "no test collected": a phase the given arguments left empty.
[ "$parallel" = 5 ] && [ "$serial" != 5 ] && parallel=0
[ "$serial" = 5 ] && [ "$parallel" != 5 ] && serial=0
echo "suite wall time: parallel phase $(took "$start" "$middle") (exit $parallel), serial phase" \
     "$(took "$middle" "$end") (exit $serial), total $(took "$start" "$end")"
[ "$parallel" != 0 ] && exit "$parallel"
exit "$serial"

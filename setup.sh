#!/usr/bin/env bash
# One entry point for a fresh Debian 12 / Ubuntu machine: installs what is missing (system
# libraries through apt, a Rust toolchain, the Python environment with the native core built by
# maturin, the Firebird engines), then runs the quickstart benchmark or the test suite.
#
#   ./setup.sh quickstart   # short TPC-C run on embedded Firebird 5.0: summary + HTML report
#   ./setup.sh test         # lint, Rust tests, and the pytest suite on real engines
#   ./setup.sh env          # only set up; then use .venv/bin/fbbench
set -euo pipefail
cd "$(dirname "$0")"
mode="${1:-quickstart}"
case "$mode" in quickstart|test|env) ;; *) echo "usage: $0 quickstart|test|env" >&2; exit 2 ;; esac

began=$SECONDS  # ./setup.sh test prints how long each part took
# Each step's start, in seconds since this script began: where a fresh clone's set-up spends its time.
say() { printf '\033[1m==> %s\033[0m [%d s]\n' "$*" "$((SECONDS - began))"; }
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "need root to run: $*" >&2; exit 1; fi
}
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
available() { [ -n "$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}' | grep -v '(none)')" ]; }

# --- system packages -------------------------------------------------------------------------
# libtommath1: Firebird 4/5 (and 3/4 through a libtommath.so.0 link fbbench makes);
# libncurses5: Firebird 3's client library; gcc: the linker Rust needs, and the C benchmark client.
wanted=(libtommath1 libncurses5 gcc python3-venv ca-certificates curl)
if [ "$mode" = test ]; then
  # The loopback client/server tests and the HTML report test; nftables and iproute2 for the
  # machine shapes' network tests (a link's loss where the kernel has no netem).
  wanted+=(firebird3.0-server chromium nftables iproute2)
fi
missing=()
for pkg in "${wanted[@]}"; do installed "$pkg" || missing+=("$pkg"); done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing system packages: ${missing[*]}"
  as_root apt-get update -qq
  installable=()
  for pkg in "${missing[@]}"; do
    if available "$pkg"; then installable+=("$pkg"); else echo "note: $pkg is not available here; skipped" >&2; fi
  done
  if [ ${#installable[@]} -gt 0 ]; then
    # The server package must not start a system-wide instance: the tests start their own.
    as_root env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq --no-install-recommends \
      "${installable[@]}" >/dev/null
  fi
fi

# --- Python ----------------------------------------------------------------------------------
python=""
for candidate in python3.13 python3.12 python3.11 python3; do
  if command -v "$candidate" >/dev/null &&
     "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    python="$candidate"; break
  fi
done
[ -n "$python" ] || { echo "fbbench needs Python 3.11 or later" >&2; exit 1; }

# --- Rust (for the native load core) ---------------------------------------------------------
# PyO3 0.27 needs Rust >= 1.74; Debian 12's own cargo (1.63) is too old, so rustup is the way.
export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null; then
  say "installing a Rust toolchain (rustup)"
  if curl -fsS --max-time 20 https://sh.rustup.rs -o /tmp/rustup-init.sh 2>/dev/null; then
    sh /tmp/rustup-init.sh -y --profile minimal >/dev/null
  else
    echo "cannot reach https://sh.rustup.rs: install Rust >= 1.74 (https://rustup.rs) and run $0 again" >&2
    exit 1
  fi
fi
rust_minor="$(rustc --version | sed -E 's/^rustc 1\.([0-9]+).*/\1/')"
if [ "${rust_minor:-0}" -lt 74 ]; then
  echo "$(rustc --version) is too old for the native core: install Rust >= 1.74 (https://rustup.rs)" >&2
  exit 1
fi
if [ "$mode" = test ] && command -v rustup >/dev/null; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi
if [ "$mode" = test ]; then
  # The native core's own checks run beside the release build that pip starts next, in a target
  # directory of their own (cargo locks one; theirs are other profiles anyway): that build's last
  # crate (one codegen unit, thin LTO) keeps one core busy for most of a minute, the checks the other.
  # Built without debug information, which no one reads there: 94 s of CPU against 108 s (one build each).
  # Clippy lints the crate inside the test build (clippy-driver as the workspace's compiler, as
  # `cargo clippy` runs it; warnings denied, the dependencies' capped by cargo): the dependencies
  # are compiled once instead of once checked for clippy and once built for the tests, 64 s of
  # CPU against 96 s. Where no clippy-driver is found, `cargo clippy` says what is missing.
  mkdir -p core/target
  core_log=core/target/checks.log
  clippy_driver="$( (command -v rustup >/dev/null && rustup which clippy-driver 2>/dev/null) ||
                    command -v clippy-driver || true)"
  (cd core && export CARGO_TARGET_DIR=target/checks CARGO_PROFILE_DEV_DEBUG=0 CARGO_PROFILE_TEST_DEBUG=0 &&
     cargo fmt --check &&
     if [ -n "$clippy_driver" ]; then
       RUSTC_WORKSPACE_WRAPPER="$clippy_driver" RUSTFLAGS="-D warnings" cargo test --quiet
     else
       cargo clippy --quiet --all-targets -- -D warnings && cargo test --quiet
     fi && echo "(the native core's checks ended at $((SECONDS - began)) s)") >"$core_log" 2>&1 &
  core_checks=$!
  trap 'kill "$core_checks" ${type_check:-} 2>/dev/null || true' EXIT
fi

# --- the fbbench environment -----------------------------------------------------------------
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $python"
  "$python" -m venv .venv
fi
# uv installs the ninety-odd packages in 16 s where pip 23 (Debian 12's, and this venv's) takes
# 53 s; pip stays the way wherever uv cannot be had or cannot reach the index (uv reads no pip.conf).
# Compiled to bytecode as pip does: where PYTHONDONTWRITEBYTECODE is set, every process would
# otherwise compile what it imports from source.
say "installing fbbench's Python dependencies"
if .venv/bin/python -m pip install --quiet --disable-pip-version-check uv &&
   .venv/bin/uv pip install --quiet --compile-bytecode --python .venv/bin/python -r pyproject.toml --extra dev; then
  if [ "$mode" = test ]; then
    mkdir -p core/target
    .venv/bin/mypy >core/target/mypy.log 2>&1 &  # beside the build; waited for below
    type_check=$!
  fi
  say "building fbbench and its native core (maturin, release)"
  .venv/bin/uv pip install --quiet --python .venv/bin/python --no-deps -e .
else
  echo "note: uv could not install the dependencies; pip does, more slowly" >&2
  say "building fbbench and its native core (maturin, release)"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
fi
# An editable install leaves fbbench's own modules uncompiled, and where PYTHONDONTWRITEBYTECODE
# is set (as on the project's machines) every fbbench process would compile them again from
# source, 0.1 s of CPU each, and the test suite starts many. Written once here, then read.
.venv/bin/python -m compileall -q fbbench tests benchmarks

if [ "$mode" = test ]; then
  engines=(3.0 4.0 5.0)
  if [ -z "${type_check:-}" ]; then
    .venv/bin/mypy >core/target/mypy.log 2>&1 &  # beside the engines' download; waited for below
    type_check=$!
  fi
else
  engines=(5.0)
fi
.venv/bin/fbbench engines install "${engines[@]}"

case "$mode" in
  env)
    say "ready: .venv/bin/fbbench --help" ;;
  quickstart)
    say "quickstart: TPC-C, 1 warehouse, 4 connections, 20 s warm-up + 60 s measured, embedded Firebird 5.0"
    exec .venv/bin/fbbench run tpcc --engine 5.0 --scale warehouses=1 --connections 4 --warmup 20s --duration 60s ;;
  test)
    say "lint and type check"
    .venv/bin/ruff check fbbench tests benchmarks
    typed=0
    wait "$type_check" || typed=$?
    cat core/target/mypy.log
    [ "$typed" = 0 ] || exit "$typed"
    say "native core: cargo fmt, clippy, test (started before the build)"
    core_status=0
    wait "$core_checks" || core_status=$?
    cat "$core_log"
    [ "$core_status" = 0 ] || { echo "the native core's checks failed (exit $core_status)" >&2; exit "$core_status"; }
    trap - EXIT  # both waited for: their pids may be another process's from here on
    checked=$SECONDS
    say "tests on real engines"
    # Two phases (tests/run.sh): the tests that time nothing on five workers, then those that time
    # something or load the whole machine, alone. The slowest of each are listed: the suite must stay
    # under 20 minutes on a 2-core machine with nothing beside it.
    status=0
    tests/run.sh --durations=25 || status=$?
    echo "./setup.sh test: set-up, lint and the native core's tests $((checked - began)) s," \
         "the pytest phases $((SECONDS - checked)) s, in all $((SECONDS - began)) s"
    exit "$status" ;;
esac

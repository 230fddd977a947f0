"""How fast does fbbench reach a sound verdict? Figures, not a timed test.

Two variants of one workload differ by a known amount of work: ``benchmarks/workloads/spin``, a
PSQL procedure that loops ``loops`` × 100 rounds of integer arithmetic and touches no table, run
with ``--scale loops=100`` (A) and ``loops=103`` (B does 3 % more work a unit). A short run with
``loops=1`` gives a unit's fixed cost f (the call, the commit) beside the cost c of a loop, so the
true B/A throughput ratio is known: (f + 100·c) / (f + 103·c).

Measured on one engine, through the real commands, in a private FBBENCH_HOME:

- **sequential, interleaved** — ``fbbench sweep`` over ``scale.loops = [100, 103]`` with R repeats:
  runs one after another, A B A B …, each cell a series; compared as ``fbbench compare`` compares
  two series (fbbench.analysis.stats.compare);
- **paired, time-shared** — ``fbbench compare --paired A.toml B.toml --pairs P``: both runs of a
  pair at the same time, their engines taking turns of 0.1 s, compared pair by pair.

For each, the machine time to resolve the 3 % difference with 95 % confidence: the first k
(repeats a side, or pairs) from which every verdict on the first k, k+1 … runs says "B slower"
— machine time counts warm-up + measured seconds of every run (both sides; time-shared runs
share their seconds), and the wall time the runs really took is printed next to it. Target:
≤ 15 minutes.

A/A — the same conditions compared with themselves: P time-shared pairs of A with A
(``compare --paired A.toml A.toml``), and the sequential A runs and B runs split in two. The
false-claim rate is the share of comparisons that claim a difference: over every subset of 6 and
of k of the A/A pairs (k: the number that resolved A/B), and over random draws of k against k
other sequential runs of one side. The subsets reuse the same runs, so they are not independent
experiments: the rate checks the method on these data, and the number of runs behind it is
printed. Target: ≤ 5 %.

    .venv/bin/python benchmarks/compare_resolution.py [--engine 5.0] [--connections 2]
        [--warmup 5s] [--duration 20s] [--repeats 10] [--pairs 10] [--draws 400] [--keep DIR]
    .venv/bin/python benchmarks/compare_resolution.py --from DIR   # the figures of a kept home again
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fbbench.analysis import stats  # noqa: E402
from fbbench.runner.settings import parse_duration  # noqa: E402
from fbbench.store import ResultsStore  # noqa: E402

WORKLOAD = HERE / "workloads" / "spin"
LOOPS_A, LOOPS_B = 100, 103
LOOPS_FIXED = 1  # a scale value must be positive: f + 1·c


def fbbench(home: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "fbbench", *arguments], cwd=HERE.parent, text=True,
                          env={**os.environ, "FBBENCH_HOME": str(home)}, capture_output=True)
    if done.returncode != 0:
        sys.exit(f"fbbench {' '.join(arguments)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                 f"{done.stderr[-2000:]}")
    return done


def spec(home: Path, name: str, args: argparse.Namespace, loops: int, **extra: Any) -> Path:
    path = home / f"{name}.toml"
    lines = [f'workload = "{WORKLOAD}"', f'engine = "{args.engine}"', f"connections = {args.connections}",
             f'warmup = "{args.warmup}"', f'duration = "{args.duration}"']
    lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
    path.write_text("\n".join(lines) + f"\n[scale]\nloops = {loops}\n")
    return path


def headlines(store: ResultsStore, run_ids: Sequence[str]) -> tuple[list[float], list[float]]:
    """Each run's headline (units per minute) and the wall time it took, start to end."""
    values, walls = [], []
    for run_id in run_ids:
        run = store.load_run(run_id)
        if run["status"] != "completed":
            sys.exit(f"run {run_id} did not complete: {run['status']} {run.get('failure') or ''}")
        values.append(float(run["summary"]["headline"]["result"]))
        walls.append(float(run["ended_at"]) - float(run["started_at"]))
    return values, walls


def resolution(a: Sequence[float], b: Sequence[float], estimate: Callable[[Sequence[float], Sequence[float]],
               stats.Ratio]) -> tuple[int | None, list[tuple[int, stats.Ratio]]]:
    """The first k from which every verdict on the first k … n values a side says B is lower."""
    rows = [(k, estimate(a[:k], b[:k])) for k in range(2, min(len(a), len(b)) + 1)]
    first = None
    for k, ratio in rows:
        right = ratio.resolved and ratio.high < 1.0
        if right and first is None:
            first = k
        elif not right:
            first = None
    return first, rows


def false_claims(values: Sequence[float], k: int, draws: int, estimate: Callable[[Sequence[float], Sequence[float]],
                 stats.Ratio], rng: random.Random) -> tuple[int, int]:
    """Claims among ``draws`` comparisons of k values against k other values, drawn at random."""
    claims = 0
    for _ in range(draws):
        chosen = rng.sample(list(values), 2 * k)
        claims += estimate(chosen[:k], chosen[k:]).resolved
    return claims, draws


def series_estimate(a: Sequence[float], b: Sequence[float]) -> stats.Ratio:
    return stats.ratio_of_series(a, b, seed=0)


def print_rows(rows: list[tuple[int, stats.Ratio]], seconds_per_k: float, what: str) -> None:
    print(f"  {what:>8}  machine time   B/A      95 % interval       verdict")
    for k, ratio in rows:
        interval = f"{ratio.low:.4f}–{ratio.high:.4f}" if ratio.has_interval else "none"
        word = "B slower" if ratio.resolved and ratio.high < 1 else "B faster" if ratio.resolved else "unresolved"
        print(f"  {k:>8}  {k * seconds_per_k / 60:>8.1f} min  {ratio.ratio:.4f}   {interval:<18} {word}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default="5.0")
    parser.add_argument("--connections", type=int, default=2)
    parser.add_argument("--warmup", default="5s")
    parser.add_argument("--duration", default="20s")
    parser.add_argument("--repeats", type=int, default=10, help="sequential: runs a side")
    parser.add_argument("--pairs", type=int, default=10, help="time-shared: pairs A/B, and pairs A/A")
    parser.add_argument("--draws", type=int, default=400, help="A/A: random comparisons drawn from the runs")
    parser.add_argument("--keep", type=Path, help="keep the private FBBENCH_HOME (results store) here")
    parser.add_argument("--from", dest="source", type=Path,
                        help="measure nothing: print the figures of a home kept with --keep")
    args = parser.parse_args()
    load_before = os.getloadavg()
    if args.source is not None:
        home = args.source
    else:
        home = Path(tempfile.mkdtemp(prefix="fbbench-resolution-", dir="/tmp"))
        try:
            measure(home, args)
            if args.keep:
                shutil.copytree(home, args.keep, dirs_exist_ok=True)
            analyse(home, args, load_before)
        finally:
            shutil.rmtree(home, ignore_errors=True)
        return
    analyse(home, args, None)


def measure(home: Path, args: argparse.Namespace) -> None:
    """Every run, through the real commands; what they measured stays in ``home``."""
    spec_a = spec(home, "a", args, LOOPS_A)
    spec_b = spec(home, "b", args, LOOPS_B)
    fbbench(home, "run", "--spec", str(spec(home, "fixed", args, LOOPS_FIXED)))
    sweep = home / "sweep.toml"
    sweep.write_text(spec(home, "base", args, LOOPS_A, repeats=args.repeats).read_text().replace(
        f"[scale]\nloops = {LOOPS_A}\n", "") + f'[matrix]\n"scale.loops" = [{LOOPS_A}, {LOOPS_B}]\n')
    fbbench(home, "sweep", str(sweep), "--json", str(home / "sweep.json"))
    fbbench(home, "compare", "--paired", str(spec_a), str(spec_b), "--pairs", str(args.pairs), "--axis",
            "scale.loops", "--json", str(home / "paired.json"))
    fbbench(home, "compare", "--paired", str(spec_a), str(spec_a), "--pairs", str(args.pairs),
            "--json", str(home / "aa.json"))


def pairs_wall(store: ResultsStore, a: Sequence[str], b: Sequence[str]) -> float:
    """Wall seconds of time-shared pairs: from the first start to the last end of each pair."""
    total = 0.0
    for run_a, run_b in zip(a, b, strict=True):
        runs = [store.load_run(run_a), store.load_run(run_b)]
        total += max(float(r["ended_at"]) for r in runs) - min(float(r["started_at"]) for r in runs)
    return total


def analyse(home: Path, args: argparse.Namespace, load_before: tuple[float, float, float] | None) -> None:
    rng = random.Random(20261124)
    base = tomllib.loads((home / "a.toml").read_text())
    load_seconds = parse_duration(base["warmup"], "warmup") + parse_duration(base["duration"], "duration")
    cells = json.loads((home / "sweep.json").read_text())["cells"]
    by_loops = {int(cell["values"]["scale.loops"]): [run["run_id"] for run in sorted(
        cell["runs"], key=lambda run: run["repeat_index"])] for cell in cells}

    def paired_runs(document: str) -> dict[str, list[str]]:
        sides = json.loads((home / document).read_text())["sides"]
        return {side["label"]: [run["run_id"] for run in side["runs"]] for side in sides}

    with ResultsStore(home / "results.sqlite", create=False) as store:
        every = [store.load_run(run["run_id"]) for run in store.list_runs(10_000)]
        fixed = next(run for run in every if str(run["settings"]["scale"].get("loops")) == str(LOOPS_FIXED))
        fixed_rate, _ = headlines(store, [fixed["run_id"]])
        seq_a, seq_a_wall = headlines(store, by_loops[LOOPS_A])
        seq_b, seq_b_wall = headlines(store, by_loops[LOOPS_B])
        ab = paired_runs("paired.json")
        par_a, par_a_wall = headlines(store, ab["A"])
        par_b, _ = headlines(store, ab["B"])
        aa = paired_runs("aa.json")
        aa_a, _ = headlines(store, aa["A"])
        aa_b, _ = headlines(store, aa["B"])
        sweep_wall = sum(seq_a_wall) + sum(seq_b_wall)
        paired_wall = pairs_wall(store, ab["A"], ab["B"])
        aa_paired_wall = pairs_wall(store, aa["A"], aa["B"])
    total_wall = max(float(r["ended_at"]) for r in every) - min(float(r["started_at"]) for r in every)
    repeats, pairs = min(len(seq_a), len(seq_b)), len(par_a)
    engine, connections = fixed["settings"]["engine"], fixed["settings"]["connections"]

    # The known difference: a unit costs f + loops·c; from the loops=1 and loops=100 rates.
    per_unit_one = 60 / fixed_rate[0]
    per_unit_a = 60 / (sorted(seq_a)[len(seq_a) // 2])
    per_loop = (per_unit_a - per_unit_one) / (LOOPS_A - LOOPS_FIXED)
    per_unit_fixed = per_unit_one - LOOPS_FIXED * per_loop
    expected = (per_unit_fixed + LOOPS_A * per_loop) / (per_unit_fixed + LOOPS_B * per_loop)

    print(f"compare resolution — workload spin (PSQL loop of loops×100 rounds), Firebird {engine} embedded, "
          f"{connections} connections, warm-up {base['warmup']}, measured {base['duration']} a run"
          + (f" (figures of {home}, measured before)" if load_before is None else ""))
    before = "" if load_before is None else f"load average before: {', '.join(f'{v:.2f}' for v in load_before)}; "
    print(f"host: {os.cpu_count()} CPUs; {before}the whole benchmark took {total_wall / 60:.1f} min wall time")
    print(f"A = loops {LOOPS_A}, B = loops {LOOPS_B}; a unit's fixed cost {per_unit_fixed * 1e3:.3f} ms-attachment, "
          f"{per_loop * 1e3:.4f} ms a loop → true B/A throughput {expected:.4f} "
          f"({(expected - 1) * 100:+.2f} %)\n")

    seq_k, seq_rows = resolution(seq_a, seq_b, series_estimate)
    seq_per_k = 2 * load_seconds  # one run a side
    seq_wall_per_k = sweep_wall / repeats
    print(f"sequential, interleaved (fbbench sweep, A B A B …, compared as two series: "
          f"{seq_rows[-1][1].method}):")
    print_rows(seq_rows, seq_per_k, "repeats")
    if seq_k is None:
        print(f"  → not resolved within {repeats} repeats a side ({repeats * seq_per_k / 60:.1f} min "
              "machine time)")
    else:
        print(f"  → resolved from {seq_k} repeats a side: {seq_k * seq_per_k / 60:.1f} min machine time "
              f"(wall time with start-up, population copies, gstat and checks: {seq_k * seq_wall_per_k / 60:.1f} min)")
    spread = lambda v: (max(v) - min(v)) / sorted(v)[len(v) // 2] * 100  # noqa: E731
    print(f"  spread between runs: A {spread(seq_a):.1f} %, B {spread(seq_b):.1f} % (max − min over the median); "
          f"run wall time median {sorted(seq_a_wall)[len(seq_a_wall) // 2]:.0f} s\n")

    par_k, par_rows = resolution(par_a, par_b, lambda a, b: stats.ratio_of_pairs(a, b))
    par_per_k = load_seconds  # both runs of a pair share the same seconds
    par_wall_per_k = paired_wall / pairs
    ratios = [b / a for a, b in zip(par_a, par_b, strict=True)]
    print(f"paired, time-shared (fbbench compare --paired, turns of 0.1 s, compared pair by pair: "
          f"{par_rows[-1][1].method}):")
    print_rows(par_rows, par_per_k, "pairs")
    if par_k is None:
        print(f"  → not resolved within {pairs} pairs ({pairs * par_per_k / 60:.1f} min machine time)")
    else:
        print(f"  → resolved from {par_k} pairs: {par_k * par_per_k / 60:.1f} min machine time (wall time with "
              f"start-up, population copies, gstat and checks: {par_k * par_wall_per_k / 60:.1f} min)")
    print(f"  per-pair B/A: {', '.join(f'{r:.4f}' for r in ratios)}; "
          f"run wall time median {sorted(par_a_wall)[len(par_a_wall) // 2]:.0f} s\n")

    k_seq = seq_k or max(2, repeats // 2)
    k_par = par_k or max(2, pairs // 2)
    print("A/A (the same conditions against themselves; a claim is a verdict of any difference):")
    aa_ratio = stats.ratio_of_pairs(aa_a, aa_b)
    print(f"  time-shared A/A, all {pairs} pairs: B/A {aa_ratio.ratio:.4f} "
          f"({aa_ratio.low:.4f}–{aa_ratio.high:.4f}) → {'CLAIMS a difference' if aa_ratio.resolved else 'no claim'}; "
          f"{aa_paired_wall / 60:.1f} min wall")
    pair_ratios = [b / a for a, b in zip(aa_a, aa_b, strict=True)]
    print(f"  time-shared A/A per-pair ratios: {', '.join(f'{r:.4f}' for r in pair_ratios)}")
    for k in sorted({min(stats.MIN_EXACT_MEDIAN, pairs), min(k_par, pairs)}):
        # Every subset of k of the pairs (they overlap: a check of the method on these data, not
        # independent experiments).
        subsets = list(itertools.combinations(pair_ratios, k))
        claims = sum(stats.ratio_of_ratios(list(subset)).resolved for subset in subsets)
        print(f"  time-shared A/A, every {k} of its {pairs} pairs ({len(subsets)} subsets): {claims} claim(s) "
              f"({claims / len(subsets) * 100:.1f} %)")
    if 2 * k_seq <= repeats:
        claims_a, n_a = false_claims(seq_a, k_seq, args.draws, series_estimate, rng)
        claims_b, n_b = false_claims(seq_b, k_seq, args.draws, series_estimate, rng)
        print(f"  sequential A/A, {args.draws} draws of {k_seq} against {k_seq} of the {repeats} A runs: "
              f"{claims_a} claims ({claims_a / n_a * 100:.1f} %); of the B runs: {claims_b} claims "
              f"({claims_b / n_b * 100:.1f} %)")
    else:
        print(f"  sequential A/A: {repeats} runs a side are too few to draw two disjoint groups of {k_seq}")
    print("\ntargets: A/A false claims ≤ 5 %; A/B resolved within 15 min machine time")


if __name__ == "__main__":
    main()

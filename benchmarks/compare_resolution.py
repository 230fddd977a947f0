"""How fast does fbbench reach a sound verdict? Figures, not a timed test.

Variants of one workload differ by a known amount of work: ``benchmarks/workloads/spin``, a PSQL
procedure that loops ``loops`` × 100 rounds of integer arithmetic and touches no table, run with
``--scale loops=100`` (A), ``loops=103`` (B3: 3 % more work a unit) and ``loops=101`` (B1: 1 %).
A short run with ``loops=1`` gives a unit's fixed cost f (the call, the commit) beside the cost c
of a loop, so the true B/A throughput ratios are known: (f + 100·c) / (f + 103·c) and
(f + 100·c) / (f + 101·c).

Measured on one engine, through the real commands, in a private FBBENCH_HOME:

- **sequential, interleaved** — ``fbbench sweep`` over ``scale.loops = [100, 103]`` with R repeats:
  runs one after another, A B A B …, each cell a series; compared as ``fbbench compare`` compares
  two series (fbbench.analysis.stats.compare). ``--repeats 0`` leaves it out;
- **paired, time-shared, a fixed number** — ``fbbench compare --paired A.toml B3.toml --pairs P``:
  both runs of a pair at the same time, their engines taking turns of 0.1 s, compared pair by pair;
- **paired until resolved** — ``fbbench compare --paired A.toml B1.toml --until-resolved
  --max-time T`` (the 1 % difference) and ``A.toml A.toml`` (A/A): pairs until the headline's
  confidence sequence, valid at every look, excludes no change or lies within ±1 %
  (fbbench.analysis.sequential), or another pair would not end within T.

For the fixed pairs and the sweep, the machine time to resolve a difference is the first k
(repeats a side, or pairs) from which every verdict on the first k, k+1 … runs says "B slower"
(judged afterwards, on every run). For pairs until resolved it is where the command stopped.
Machine time counts warm-up + measured seconds of every run (both sides; time-shared runs share
their seconds); the wall time the runs really took is printed next to it. Target: a 1 % difference
in ≤ 15 minutes.

Then, with the per-pair noise the A/A pairs measured (their log ratios and their negatives: a
difference of zero with the machine's own spread) and the known true ratios, 4,000 simulated
paths of pairs judged after every pair by each rule: the **fixed-sample rule** (compare's interval
over the pairs so far, stopping at the first that excludes no change — what a user re-running
``compare`` after each pair does) and the **sequence**. For each: how often it claims a difference
between identical sides within the pairs T allows (target ≤ 5 %), and the pairs (machine time)
by which it has resolved each true difference in half and in 95 % of the paths.

A/A on the real runs: the until-resolved A/A's own outcome, and the old check over every subset
of 6 and of k of the A/A pairs with the fixed-sample interval (overlapping subsets of the same
runs: a check of the method on these data, not independent experiments).

    .venv/bin/python benchmarks/compare_resolution.py [--engine 5.0] [--connections 2]
        [--warmup 5s] [--duration 20s] [--turn 0.1] [--repeats 10] [--pairs 10] [--max-time 15m]
        [--keep DIR]
    .venv/bin/python benchmarks/compare_resolution.py --from DIR   # the figures of a kept home again
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
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

import numpy as np  # noqa: E402

from fbbench.analysis import beta, sequential, stats  # noqa: E402
from fbbench.runner.settings import parse_duration  # noqa: E402
from fbbench.store import ResultsStore  # noqa: E402

WORKLOAD = HERE / "workloads" / "spin"
LOOPS_A, LOOPS_B3, LOOPS_B1 = 100, 103, 101
LOOPS_FIXED = 1  # a scale value must be positive: f + 1·c
PATHS = 4000  # simulated paths of pairs, per rule and difference


def fbbench(home: Path, step: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    """One command; the load average at its start and end is kept in ``home``/loads.json."""
    loads = json.loads((home / "loads.json").read_text()) if (home / "loads.json").exists() else {}
    before = os.getloadavg()
    done = subprocess.run([sys.executable, "-m", "fbbench", *arguments], cwd=HERE.parent, text=True,
                          env={**os.environ, "FBBENCH_HOME": str(home), "COLUMNS": "160"}, capture_output=True)
    if done.returncode != 0:
        sys.exit(f"fbbench {' '.join(arguments)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                 f"{done.stderr[-2000:]}")
    loads[step] = {"before": before, "after": os.getloadavg()}
    (home / "loads.json").write_text(json.dumps(loads))
    (home / f"{step}.out").write_text(done.stdout)
    return done


def spec(home: Path, name: str, args: argparse.Namespace, loops: int, **extra: Any) -> Path:
    path = home / f"{name}.toml"
    if path.exists():
        return path
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default="5.0")
    parser.add_argument("--connections", type=int, default=2)
    parser.add_argument("--warmup", default="5s")
    parser.add_argument("--duration", default="20s")
    parser.add_argument("--turn", type=float, default=0.1, help="seconds each engine of a pair runs in turn")
    parser.add_argument("--repeats", type=int, default=10, help="sequential: runs a side (0: no sweep)")
    parser.add_argument("--pairs", type=int, default=10, help="time-shared: fixed pairs A/B3")
    parser.add_argument("--max-time", default="15m", help="until resolved: the limit of the A/B1 and A/A pairs")
    parser.add_argument("--draws", type=int, default=400, help="sequential A/A: random comparisons drawn")
    parser.add_argument("--keep", type=Path, help="keep the private FBBENCH_HOME (results store) here")
    parser.add_argument("--from", dest="source", type=Path,
                        help="measure nothing: print the figures of a home kept with --keep")
    args = parser.parse_args()
    if args.source is not None:
        analyse(args.source, args)
        return
    home = Path(tempfile.mkdtemp(prefix="fbbench-resolution-", dir="/tmp"))
    try:
        measure(home, args)
        if args.keep:
            shutil.copytree(home, args.keep, dirs_exist_ok=True)
        analyse(home, args)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def measure(home: Path, args: argparse.Namespace) -> None:
    """Every run, through the real commands; what they measured stays in ``home``."""
    spec_a = spec(home, "a", args, LOOPS_A)
    spec_b3 = spec(home, "b3", args, LOOPS_B3)
    spec_b1 = spec(home, "b1", args, LOOPS_B1)
    turn = ["--turn", str(args.turn)]
    fbbench(home, "fixed", "run", "--spec", str(spec(home, "fixed", args, LOOPS_FIXED)))
    if args.repeats:
        sweep = home / "sweep.toml"
        sweep.write_text(spec(home, "base", args, LOOPS_A, repeats=args.repeats).read_text().replace(
            f"[scale]\nloops = {LOOPS_A}\n", "") + f'[matrix]\n"scale.loops" = [{LOOPS_A}, {LOOPS_B3}]\n')
        fbbench(home, "sweep", "sweep", str(sweep), "--json", str(home / "sweep.json"))
    fbbench(home, "paired3", "compare", "--paired", str(spec_a), str(spec_b3), "--pairs", str(args.pairs), *turn,
            "--axis", "scale.loops", "--json", str(home / "paired3.json"))
    fbbench(home, "until1", "compare", "--paired", str(spec_a), str(spec_b1), "--until-resolved", "--max-time",
            args.max_time, *turn, "--axis", "scale.loops", "--json", str(home / "until1.json"))
    fbbench(home, "aa", "compare", "--paired", str(spec_a), str(spec_a), "--until-resolved", "--max-time",
            args.max_time, *turn, "--json", str(home / "aa.json"))


def pairs_wall(store: ResultsStore, a: Sequence[str], b: Sequence[str]) -> float:
    """Wall seconds of time-shared pairs: from the first start to the last end of each pair."""
    total = 0.0
    for run_a, run_b in zip(a, b, strict=True):
        runs = [store.load_run(run_a), store.load_run(run_b)]
        total += max(float(r["ended_at"]) for r in runs) - min(float(r["started_at"]) for r in runs)
    return total


# ------------------------------------------------------------------ rules judged after every pair


def fixed_rule_claims(logs: np.ndarray) -> np.ndarray:
    """paths × looks: where compare's fixed-sample interval over the pairs so far excludes no
    change (stats.ratio_of_ratios, vectorised: t on logs below 6 pairs, the exact order-statistic
    interval of the median from 6)."""
    paths, looks = logs.shape
    claims = np.zeros((paths, looks), dtype=bool)
    for n in range(2, looks + 1):
        first = logs[:, :n]
        if n < stats.MIN_EXACT_MEDIAN:
            half = beta.t_critical(stats.CONFIDENCE, n - 1) * first.std(axis=1, ddof=1) / np.sqrt(n)
            low, high = first.mean(axis=1) - half, first.mean(axis=1) + half
        else:
            low_end, high_end = beta.median_bounds(n, stats.CONFIDENCE)
            assert low_end is not None and high_end is not None  # both exist from MIN_EXACT_MEDIAN pairs at 95 %
            ranked = np.sort(first, axis=1)
            low, high = ranked[:, low_end], ranked[:, high_end]
        claims[:, n - 1] = (low > 0) | (high < 0)
    return claims


def sequence_claims(logs: np.ndarray, design: sequential.Design) -> np.ndarray:
    """paths × looks: where the confidence sequence excludes no change (as sequential.interval)."""
    looks = logs.shape[1]
    n = np.arange(1, looks + 1)
    mean = np.cumsum(logs, axis=1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = np.maximum(np.cumsum(logs * logs, axis=1) - n * mean * mean, 0.0) / (n - 1)
        t = np.where(variance > 0, np.abs(mean) / np.sqrt(variance / n), 0.0)
    critical = np.array([sequential.critical_t(int(k), design.confidence, design.mixture) for k in n])
    return np.nan_to_num(t, nan=0.0) >= critical


def check_vectorised(rng: np.random.Generator, design: sequential.Design) -> None:
    """The vectorised rules give what fbbench's own functions give, on a few random paths."""
    logs = rng.normal(-0.01, 0.01, (5, 12))
    fixed, seq = fixed_rule_claims(logs), sequence_claims(logs, design)
    for path in range(5):
        for n in range(2, 13):
            ratios = list(np.exp(logs[path, :n]))
            assert fixed[path, n - 1] == stats.ratio_of_ratios(ratios).resolved, (path, n)
            assert seq[path, n - 1] == sequential.interval(ratios, design).resolved, (path, n)


def first_claims(claims: np.ndarray) -> np.ndarray:
    """Per path: the pairs at the first claim (0: none)."""
    return np.where(claims.any(axis=1), claims.argmax(axis=1) + 1, 0)


def simulated(noise: np.ndarray, true_ratio: float, looks: int, design: sequential.Design,
              rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Per rule, the pairs at which each of PATHS paths first claimed a difference (0: never),
    the per-pair log ratios drawn from ``noise`` and shifted by the true difference."""
    logs = rng.choice(noise, (PATHS, looks), replace=True) + math.log(true_ratio)
    return {"fixed-sample rule": first_claims(fixed_rule_claims(logs)),
            "sequence": first_claims(sequence_claims(logs, design))}


def quantile_pairs(first: np.ndarray, share: float) -> int | None:
    """The fewest pairs by which ``share`` of the paths had claimed (None: not within the looks)."""
    resolved = np.sort(np.where(first > 0, first, np.iinfo(np.int64).max))
    index = math.ceil(share * len(first)) - 1
    return int(resolved[index]) if resolved[index] != np.iinfo(np.int64).max else None


def print_rows(rows: list[tuple[int, stats.Ratio]], seconds_per_k: float, what: str) -> None:
    print(f"  {what:>8}  machine time   B/A      95 % interval       verdict")
    for k, ratio in rows:
        interval = f"{ratio.low:.4f}–{ratio.high:.4f}" if ratio.has_interval else "none"
        word = "B slower" if ratio.resolved and ratio.high < 1 else "B faster" if ratio.resolved else "unresolved"
        print(f"  {k:>8}  {k * seconds_per_k / 60:>8.1f} min  {ratio.ratio:.4f}   {interval:<18} {word}")


def load_text(loads: dict[str, Any], step: str) -> str:
    if step not in loads:
        return "load average not recorded"
    return (f"load average at its start {', '.join(f'{v:.2f}' for v in loads[step]['before'])}, at its end "
            f"{', '.join(f'{v:.2f}' for v in loads[step]['after'])}")


def analyse(home: Path, args: argparse.Namespace) -> None:
    rng = random.Random(20261124)
    simulation = np.random.default_rng(20261128)
    base = tomllib.loads((home / "a.toml").read_text())
    load_seconds = parse_duration(base["warmup"], "warmup") + parse_duration(base["duration"], "duration")
    loads = json.loads((home / "loads.json").read_text()) if (home / "loads.json").exists() else {}

    def paired_runs(document: str) -> tuple[dict[str, list[str]], dict[str, Any]]:
        compared = json.loads((home / document).read_text())
        return {side["label"]: [run["run_id"] for run in side["runs"]] for side in compared["sides"]}, compared

    with ResultsStore(home / "results.sqlite", create=False) as store:
        every = [store.load_run(run["run_id"]) for run in store.list_runs(10_000)]
        fixed = next(run for run in every if str(run["settings"]["scale"].get("loops")) == str(LOOPS_FIXED))
        fixed_rate, _ = headlines(store, [fixed["run_id"]])
        seq_a: list[float] = []
        seq_b: list[float] = []
        seq_wall = 0.0
        if (home / "sweep.json").exists():
            cells = json.loads((home / "sweep.json").read_text())["cells"]
            by_loops = {int(cell["values"]["scale.loops"]): [run["run_id"] for run in sorted(
                cell["runs"], key=lambda run: run["repeat_index"])] for cell in cells}
            seq_a, seq_a_wall = headlines(store, by_loops[LOOPS_A])
            seq_b, seq_b_wall = headlines(store, by_loops[LOOPS_B3])
            seq_wall = sum(seq_a_wall) + sum(seq_b_wall)
        runs3, _ = paired_runs("paired3.json")
        par_a, par_a_wall = headlines(store, runs3["A"])
        par_b, _ = headlines(store, runs3["B"])
        paired_wall = pairs_wall(store, runs3["A"], runs3["B"])
        _, until1 = paired_runs("until1.json")
        complete1 = until1["pairing"]["runs"][:until1["pairing"]["complete"]]
        one_a, _ = headlines(store, [a for a, _ in complete1])
        one_b, _ = headlines(store, [b for _, b in complete1])
        until1_wall = pairs_wall(store, [a for a, _ in complete1], [b for _, b in complete1])
        _, aa = paired_runs("aa.json")
        complete_aa = aa["pairing"]["runs"][:aa["pairing"]["complete"]]
        aa_a, _ = headlines(store, [a for a, _ in complete_aa])
        aa_b, _ = headlines(store, [b for _, b in complete_aa])
        aa_wall = pairs_wall(store, [a for a, _ in complete_aa], [b for _, b in complete_aa])
    total_wall = max(float(r["ended_at"]) for r in every) - min(float(r["started_at"]) for r in every)
    engine, connections = fixed["settings"]["engine"], fixed["settings"]["connections"]
    design = sequential.Design.from_dict(until1["sequential"]["design"])

    # The known differences: a unit costs f + loops·c; from the loops=1 rate and the A pairs' median.
    per_unit_one = 60 / fixed_rate[0]
    per_unit_a = 60 / float(np.median(par_a + one_a + aa_a))
    per_loop = (per_unit_a - per_unit_one) / (LOOPS_A - LOOPS_FIXED)
    per_unit_fixed = per_unit_one - LOOPS_FIXED * per_loop
    expected = {loops: (per_unit_fixed + LOOPS_A * per_loop) / (per_unit_fixed + loops * per_loop)
                for loops in (LOOPS_B3, LOOPS_B1)}

    print(f"compare resolution — workload spin (PSQL loop of loops×100 rounds), Firebird {engine} embedded, "
          f"{connections} connections, warm-up {base['warmup']}, measured {base['duration']} a run; pairs in turns "
          f"of {json.loads((home / 'paired3.json').read_text())['pairing']['turn_seconds']:g} s"
          + (f"; figures of {home}, measured before" if args.source is not None else ""))
    print(f"host: {os.cpu_count()} CPUs; the whole benchmark took {total_wall / 60:.1f} min wall time")
    print(f"A = loops {LOOPS_A}, B3 = loops {LOOPS_B3}, B1 = loops {LOOPS_B1}; a unit's fixed cost "
          f"{per_unit_fixed * 1e3:.3f} ms-attachment, {per_loop * 1e3:.4f} ms a loop → true B/A throughput "
          f"B3 {expected[LOOPS_B3]:.4f} ({(expected[LOOPS_B3] - 1) * 100:+.2f} %), "
          f"B1 {expected[LOOPS_B1]:.4f} ({(expected[LOOPS_B1] - 1) * 100:+.2f} %)\n")

    if seq_a:
        repeats = min(len(seq_a), len(seq_b))
        seq_k, seq_rows = resolution(seq_a, seq_b, series_estimate)
        seq_per_k = 2 * load_seconds  # one run a side
        print(f"3 %, sequential, interleaved (fbbench sweep, A B A B …, compared as two series: "
              f"{seq_rows[-1][1].method}; {load_text(loads, 'sweep')}):")
        print_rows(seq_rows, seq_per_k, "repeats")
        if seq_k is None:
            print(f"  → not resolved within {repeats} repeats a side ({repeats * seq_per_k / 60:.1f} min machine time)")
        else:
            print(f"  → resolved from {seq_k} repeats a side: {seq_k * seq_per_k / 60:.1f} min machine time (wall "
                  f"time with start-up, population copies, gstat and checks: {seq_k * seq_wall / repeats / 60:.1f} "
                  "min)")
        spread = lambda v: (max(v) - min(v)) / sorted(v)[len(v) // 2] * 100  # noqa: E731
        print(f"  spread between runs: A {spread(seq_a):.1f} %, B {spread(seq_b):.1f} % (max − min over the "
              f"median)\n")

    pairs = len(par_a)
    par_k, par_rows = resolution(par_a, par_b, lambda a, b: stats.ratio_of_pairs(a, b))
    ratios3 = [b / a for a, b in zip(par_a, par_b, strict=True)]
    seq3 = sequential.looks(ratios3, design)
    print(f"3 %, paired, time-shared, {pairs} pairs (fbbench compare --paired --pairs {pairs}, compared pair by pair: "
          f"{par_rows[-1][1].method}; {load_text(loads, 'paired3')}):")
    print_rows(par_rows, load_seconds, "pairs")
    if par_k is None:
        print(f"  → not resolved within {pairs} pairs ({pairs * load_seconds / 60:.1f} min machine time)")
    else:
        print(f"  → fixed-sample interval, judged afterwards: resolved from {par_k} pairs, "
              f"{par_k * load_seconds / 60:.1f} min machine time (wall time with start-up, population copies, gstat "
              f"and checks: {par_k * paired_wall / pairs / 60:.1f} min)")
    decided = seq3[-1] if seq3 and seq3[-1].decision else None
    print("  → the sequence, had it run these pairs until resolved: " + (
        f"{decided.decision} at pair {decided.pairs} ({decided.estimate.low:.4f}–{decided.estimate.high:.4f}), "
        f"{decided.pairs * load_seconds / 60:.1f} min machine time" if decided else f"not resolved within {pairs}"))
    print(f"  per-pair B/A: {', '.join(f'{r:.4f}' for r in ratios3)}; run wall time median "
          f"{sorted(par_a_wall)[len(par_a_wall) // 2]:.0f} s\n")

    until_doc = until1["sequential"]
    ratios1 = [b / a for a, b in zip(one_a, one_b, strict=True)]
    print(f"1 %, paired until resolved (fbbench compare --paired A B1 --until-resolved --max-time {args.max_time}; "
          f"{load_text(loads, 'until1')}):")
    for look in until_doc["looks"]:
        interval = f"{look['low']:.4f}–{look['high']:.4f}" if look["low"] is not None else "none yet"
        print(f"  look {look['pairs']:>3}  {look['pairs'] * load_seconds / 60:>5.1f} min  B/A {look['ratio']:.4f}  "
              f"sequence {interval:<15} {look['decision'] or ''}")
    print(f"  → {until_doc['text']}: {len(until_doc['looks']) * load_seconds / 60:.1f} min machine time, "
          f"{until1_wall / 60:.1f} min wall time; verdict: {until1['verdicts']['B']['text']}")
    old_k, _ = resolution(one_a, one_b, lambda a, b: stats.ratio_of_pairs(a, b))
    print("  → fixed-sample interval on the same pairs, judged afterwards: " + (
        f"resolved from {old_k} pairs ({old_k * load_seconds / 60:.1f} min machine time)" if old_k
        else f"not resolved within these {len(ratios1)} pairs"))
    print(f"  per-pair B/A: {', '.join(f'{r:.4f}' for r in ratios1)}\n")

    aa_ratios = [b / a for a, b in zip(aa_a, aa_b, strict=True)]
    aa_doc = aa["sequential"]
    print(f"A/A, paired until resolved (compare --paired A A --until-resolved --max-time {args.max_time}; "
          f"{load_text(loads, 'aa')}):")
    print(f"  → {aa_doc['text']}: {len(aa_doc['looks']) * load_seconds / 60:.1f} min machine time, "
          f"{aa_wall / 60:.1f} min wall; verdict: {aa['verdicts']['B']['text']}")
    fixed_aa = stats.ratio_of_ratios(aa_ratios)
    print(f"  fixed-sample interval over all {len(aa_ratios)} A/A pairs: {fixed_aa.ratio:.4f} "
          f"({fixed_aa.low:.4f}–{fixed_aa.high:.4f}) → {'CLAIMS a difference' if fixed_aa.resolved else 'no claim'}")
    print(f"  per-pair ratios: {', '.join(f'{r:.4f}' for r in aa_ratios)}")
    for k in sorted({min(stats.MIN_EXACT_MEDIAN, len(aa_ratios)), min(par_k or 6, len(aa_ratios))}):
        subsets = list(itertools.combinations(aa_ratios, k))
        if len(subsets) > 20_000:
            subsets = [tuple(rng.sample(aa_ratios, k)) for _ in range(20_000)]
        claims = sum(stats.ratio_of_ratios(list(subset)).resolved for subset in subsets)
        print(f"  fixed-sample interval, {len(subsets):,} subsets of {k} of the {len(aa_ratios)} A/A pairs: "
              f"{claims} claim(s) ({claims / len(subsets) * 100:.1f} %)")
    if seq_a and min(len(seq_a), len(seq_b)) >= 4:
        k_seq = min(len(seq_a), len(seq_b)) // 2
        claims_a, n_a = false_claims(seq_a, k_seq, args.draws, series_estimate, rng)
        print(f"  sequential runs, {args.draws} draws of {k_seq} against {k_seq} of the A runs: {claims_a} claims "
              f"({claims_a / n_a * 100:.1f} %)")

    spread = float(np.std(np.log(aa_ratios), ddof=1))
    looks = max(1, int(design.max_seconds // load_seconds)) if design.max_seconds else 40
    noise = np.concatenate([np.log(aa_ratios), -np.log(aa_ratios)])
    check_vectorised(simulation, design)
    print(f"\nsimulated ({PATHS:,} paths a row): each pair's log B/A drawn from the {len(aa_ratios)} A/A pairs' log "
          f"ratios and their negatives (spread {spread * 100:.2f} %), plus the true difference; judged after every "
          f"pair up to {looks} pairs ({looks * load_seconds / 60:.1f} min machine time: --max-time of load)")
    print(f"  {'rule':<18} {'A/A: claims':>12} {'3 %: half by':>16} {'95 % by':>16} {'1 %: half by':>16} "
          f"{'95 % by':>16}")
    results = {true: simulated(noise, true, looks, design, simulation)
               for true in (1.0, expected[LOOPS_B3], expected[LOOPS_B1])}
    for rule in ("fixed-sample rule", "sequence"):
        cells = [f"{(results[1.0][rule] > 0).mean() * 100:.1f} %"]
        for true in (expected[LOOPS_B3], expected[LOOPS_B1]):
            for share in (0.5, 0.95):
                k = quantile_pairs(results[true][rule], share)
                cells.append(f"{k} ({k * load_seconds / 60:.1f} min)" if k else f"> {looks} pairs")
        print(f"  {rule:<18} {cells[0]:>12} " + " ".join(f"{cell:>16}" for cell in cells[1:]))
    print("\ntargets: A/A false claims ≤ 5 %; a 1 % difference resolved within 15 min machine time")


if __name__ == "__main__":
    main()

"""The case study of docs/case-study-application.md: "will *our* application be faster on Firebird 5?"

An application team brings its database (a gbak backup) and its application; fbbench turns a trace
of the application at work into a workload and a replay, and compares them across the engines.
Here docflow (OLTP-EMUL's document flow) stands in for the application:

1. the application's database: docflow's population built by Firebird 3.0, backed up with gbak
   through the 3.0 engine's services API (the engine's own gbak; the embedded packages ship no
   gbak binary);
2. the application at work: docflow on that database restored on 5.0, at a moderate open-loop
   rate, traced (``fbbench run … --database-from app.fbk --trace app.trace``);
3. ``fbbench workload from-trace app.trace -o myapp``: a workload directory and its README, whose
   "What it covers" and "What it leaves out" sections the page quotes;
4. the generated workload on 3.0, 4.0 and 5.0 as time-shared pairs (``fbbench compare --paired``
   of spec files with ``workload = "myapp"`` and ``database_from = "app.fbk"``): 3.0 → 4.0,
   4.0 → 5.0, 3.0 → 5.0 — at the traced pace (the units' traced think times), and again at the
   engine's capacity (``--scale think=off``: the units back to back);
5. ``fbbench replay app.trace --database-from app.fbk --engine V --repeat N`` on each engine, and
   ``fbbench compare`` of the replay series across the engines.

It writes the page with its commands, conditions and this machine's figures; nothing is asserted:

    .venv/bin/python benchmarks/case_study_application.py [--trace-seconds 40] [--pairs 6]
        [--warmup 5s] [--duration 25s] [--repeats 3] [--rate 60] [--connections 4]
        [--parts workload capacity replay] [--page docs/case-study-application.md]

The defaults are sized for about 30 minutes on a 2-core VM (a 40 s trace, 2 × 3 × 6 pairs of 30 s,
3 × 3 replays of the trace's 40 s, each with a few seconds of set-up); `--trace-seconds 8 --pairs 2
--warmup 1s --duration 5s --repeats 2` runs it end to end in about 3 minutes (too few pairs and
repeats for much to resolve, and the page says so).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

TARGET = Path(__file__).stem
ENGINES = ("3.0", "4.0", "5.0")
PAIRS = (("3.0", "4.0"), ("4.0", "5.0"), ("3.0", "5.0"))


# ------------------------------------------------------------- run inside the engine child process


def backup(database: str, target: str) -> int:
    """gbak -b of ``database`` to ``target`` through the services API of the engine this child
    runs (it only reads the database); the backup's size."""
    from fbbench.database import driver

    with driver.server("") as server:
        server.database.backup(database=database, backup=target)
        server.wait()
    return os.path.getsize(target)


# ----------------------------------------------------------------------------- the parent process


@dataclass
class Study:
    home: Path
    commands: list[str] = field(default_factory=list)
    specs: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what did not go as planned, for the page

    def fbbench(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``fbbench ARGS`` in the study's directory (FBBENCH_HOME=it), recorded for the page as typed."""
        self.commands.append("fbbench " + " ".join(shlex.quote(a) for a in args))
        print(f"{time.strftime('%H:%M:%S')} {self.commands[-1]}", file=sys.stderr, flush=True)
        done = subprocess.run([sys.executable, "-m", "fbbench", *args], cwd=self.home, capture_output=True, text=True,
                              env={**os.environ, "FBBENCH_HOME": str(self.home), "COLUMNS": "150",
                                   "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH"))
                                                                 if p)})
        if check and done.returncode != 0:
            sys.exit(f"fbbench {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                     f"{done.stderr[-2000:]}")
        return done

    def json(self, name: str) -> dict[str, Any]:
        document: dict[str, Any] = json.loads((self.home / name).read_text())
        return document

    def latest_series(self) -> str | None:
        from fbbench.store import ResultsStore

        with ResultsStore(self.home / "results.sqlite", create=False) as store:
            return store.list_runs(1)[0]["series_id"]


@dataclass
class Comparison:
    title: str
    command: str
    document: dict[str, Any] | None
    failure: str | None = None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connections", type=int, default=4, help="the application's attachments (docflow workers)")
    parser.add_argument("--init-rounds", type=int, default=10, help="docflow's population: rounds per worker")
    parser.add_argument("--rate", type=float, default=60, help="the traced application's units/s in all (open loop)")
    parser.add_argument("--trace-seconds", type=int, default=40, help="how long the application is traced")
    parser.add_argument("--pairs", type=int, default=6, help="time-shared pairs per comparison of the workload")
    parser.add_argument("--warmup", default="5s", help="warm-up of each run of the generated workload")
    parser.add_argument("--duration", default="25s", help="measured period of each run of the generated workload")
    parser.add_argument("--repeats", type=int, default=3, help="replays per engine (one series each)")
    parser.add_argument("--speed", type=float, default=1.0, help="replay speed (1: the traced times)")
    parser.add_argument("--order", choices=("timed", "strict"), default="timed", help="replay order")
    parser.add_argument("--parts", nargs="+", choices=("workload", "capacity", "replay"),
                        default=["workload", "capacity", "replay"],
                        help="step 4 at the traced pace (workload) and at the engine's capacity (capacity: "
                             "--scale think=off), step 5 (replay): all by default")
    parser.add_argument("--page", type=Path, default=REPO / "docs" / "case-study-application.md")
    args = parser.parse_args()
    if args.pairs < 6:
        print(f"note: {args.pairs} pairs; an exact interval of the median needs at least 6", file=sys.stderr)
    home = Path(tempfile.mkdtemp(prefix="fbbench-application-", dir="/tmp"))
    study = Study(home)
    started, load_before = time.time(), os.getloadavg()
    facts: dict[str, Any] = {}
    try:
        facts.update(the_database(study, args))
        facts.update(the_application(study, args))
        facts.update(the_workload(study))
        paired = the_workload_on_each_engine(study, args) if "workload" in args.parts else []
        capacity = the_workload_on_each_engine(study, args, capacity=True) if "capacity" in args.parts else []
        replays, replay_comparisons = the_replay_on_each_engine(study, args) if "replay" in args.parts else ({}, [])
        page = render(args, study, facts, paired, capacity, replays, replay_comparisons, load_before,
                      os.getloadavg(), time.time() - started)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    args.page.write_text(page)
    print(page)


# ------------------------------------------------------------------------------------- the steps


def the_database(study: Study, args: argparse.Namespace) -> dict[str, Any]:
    """Step 1: docflow's population built by 3.0 (a run of one unit, its database kept), then gbak."""
    from fbbench.engines import prepare_runtime, run_in_engine

    study.fbbench("run", "docflow", "--engine", "3.0", "--scale", f"workers={args.connections}", "--scale",
                  f"init_rounds={args.init_rounds}", "--connections", "1", "--transactions", "1", "--no-sweep",
                  "--keep-database", "--json", "build.json")
    built = study.json("build.json")
    database = built["database"]["path"]
    study.commands.append(f"# gbak -b of the kept database ({Path(database).name}) through the 3.0 engine's "
                          "services API (benchmarks/case_study_application.py: backup) -> app.fbk")
    workdir = study.home / "work"
    runtime = prepare_runtime("3.0", workdir)
    try:
        size = run_in_engine(runtime, f"{TARGET}:backup", database, str(study.home / "app.fbk"))
    finally:
        runtime.remove(workdir)
    return {"built": built, "backup_bytes": size}


def the_application(study: Study, args: argparse.Namespace) -> dict[str, Any]:
    """Step 2: the application at work on 5.0, traced."""
    study.fbbench("run", "docflow", "--database-from", "app.fbk", "--engine", "5.0", "--scale",
                  f"workers={args.connections}", "--connections", str(args.connections), "--rate", f"{args.rate:g}",
                  "--warmup", "0s", "--duration", f"{args.trace_seconds}s", "--interval",
                  f"{max(1, args.trace_seconds // 8)}s", "--seed", "7", "--trace", "app.trace", "--json",
                  "traced.json")
    return {"traced": study.json("traced.json")}


def the_workload(study: Study) -> dict[str, Any]:
    """Step 3: the workload from the trace, and its README."""
    made = study.fbbench("workload", "from-trace", "app.trace", "-o", "myapp")
    from fbbench.workloads.spec import load_workload

    workload = load_workload(str(study.home / "myapp"))
    return {"made": made.stdout.strip(), "readme": (study.home / "myapp" / "README.md").read_text(),
            "units": [(unit.name, unit.weight) for unit in workload.units]}


def _seconds(text: str) -> float:
    match = re.fullmatch(r"([0-9.]+)\s*(s|m)?", text.strip())
    if not match:
        sys.exit(f"a duration such as 25s or 1m, got {text!r}")
    return float(match.group(1)) * (60 if match.group(2) == "m" else 1)


def the_workload_on_each_engine(study: Study, args: argparse.Namespace, capacity: bool = False) -> list[Comparison]:
    """Step 4: the generated workload as time-shared pairs, engine against engine: at the traced
    pace (its think times), or at the engine's capacity (``--scale think=off``)."""
    interval = max(1, int(_seconds(args.duration) // 5))
    suffix = "-capacity" if capacity else ""
    for version in ENGINES:
        text = "\n".join([
            'workload = "myapp"', 'database_from = "app.fbk"', f'engine = "{version}"',
            f"connections = {args.connections}", f'warmup = "{args.warmup}"', f'duration = "{args.duration}"',
            f'interval = "{interval}s"', *(['scale = { think = "off" }'] if capacity else [])]) + "\n"
        (study.home / f"{version}{suffix}.toml").write_text(text)
        study.specs[f"{version}{suffix}.toml"] = text
    comparisons = []
    for a, b in PAIRS:
        out = f"workload-{a}-{b}{suffix}.json"
        done = study.fbbench("compare", "--paired", f"{a}{suffix}.toml", f"{b}{suffix}.toml", "--pairs",
                             str(args.pairs), "--axis", "engine", "--json", out, check=False)
        title = f"{a} → {b}"
        if done.returncode != 0 or not (study.home / out).exists():
            failure = (done.stderr or done.stdout).strip()[-600:]
            print(f"  failed ({done.returncode}): {failure}", file=sys.stderr, flush=True)
            comparisons.append(Comparison(title, study.commands[-1], None, failure))
            continue
        comparisons.append(Comparison(title, study.commands[-1], study.json(out)))
        print(f"  {said(comparisons[-1].document, 'headline')}", file=sys.stderr, flush=True)
    return comparisons


def the_replay_on_each_engine(study: Study, args: argparse.Namespace
                              ) -> tuple[dict[str, list[dict[str, Any]]], list[Comparison]]:
    """Step 5: the trace replayed on each engine (a series each), then the series compared."""
    series: dict[str, str] = {}
    replays: dict[str, list[dict[str, Any]]] = {}
    for version in ENGINES:
        extra = ([] if args.speed == 1 else ["--speed", f"{args.speed:g}"]) + \
            ([] if args.order == "timed" else ["--order", args.order])
        interval = max(1, int(args.trace_seconds / args.speed / 8))  # the steadiness lint wants 5 or more
        done = study.fbbench("replay", "app.trace", "--database-from", "app.fbk", "--engine", version, *extra,
                             "--repeat", str(args.repeats), "--interval", f"{interval}s",
                             "--json", f"replay-{version}.json", check=False)
        files = [study.home / f"replay-{version}{'' if args.repeats == 1 else f'-{i}'}.json"
                 for i in range(1, args.repeats + 1)]
        replays[version] = [json.loads(path.read_text()) for path in files if path.exists()]
        if done.returncode != 0:
            study.notes.append(f"the replays on {version} ended with exit code {done.returncode}: "
                               f"{(done.stderr or done.stdout).strip()[-300:]}")
        found = study.latest_series() if args.repeats > 1 else (replays[version][-1]["run_id"]
                                                                if replays[version] else None)
        if found:
            series[version] = found
    comparisons = []
    for a, b in PAIRS:
        if a not in series or b not in series:
            continue
        out = f"replay-{a}-{b}.json"
        done = study.fbbench("compare", series[a], series[b], "--axis", "engine", "--json", out, check=False)
        title = f"{a} → {b}"
        if done.returncode != 0 or not (study.home / out).exists():
            comparisons.append(Comparison(title, study.commands[-1], None, (done.stderr or done.stdout).strip()[-600:]))
            continue
        comparisons.append(Comparison(title, study.commands[-1], study.json(out)))
    return replays, comparisons


# ------------------------------------------------------------------------------------- the words


def percent(ratio: float | None) -> str:
    return "–" if ratio is None else f"{(ratio - 1) * 100:+.1f} %"


def interval(ratio: dict[str, Any]) -> str:
    if ratio.get("low") is None or ratio.get("high") is None:
        return "no interval"
    return f"{percent(ratio['low'])} to {percent(ratio['high'])}"


def figure(document: dict[str, Any], name: str) -> dict[str, Any] | None:
    """A figure of a comparison: ``headline``, ``tpm`` (by kind) or by name."""
    for item in document["figures"]:
        if item["kind"] == name or item["name"] == name:
            return item
    return None


def said(document: dict[str, Any] | None, name: str) -> str:
    """B against A for one figure, in words: a direction only when its interval excludes no change."""
    if document is None:
        return "not compared"
    item = figure(document, name)
    if item is None:
        return "no such figure"
    ratio = item["ratios"].get("B") or {}
    if ratio.get("ratio") is None:
        return "no ratio (a side has no value)"
    if name in ("headline",) and not document.get("valid", True):
        return f"withheld, the comparison is invalid: {document.get('invalid_because')}"
    if not ratio.get("resolved"):
        return f"not resolved: {percent(ratio['ratio'])}, 95 % interval {interval(ratio)}"
    higher = ratio["ratio"] > 1
    better = higher == (item.get("better") == "higher")
    return (f"{'higher' if higher else 'lower'} by {abs(ratio['ratio'] - 1) * 100:.1f} % "
            f"({'better' if better else 'worse'}; 95 % interval {interval(ratio)})")


def value(document: dict[str, Any] | None, name: str, label: str) -> str:
    item = figure(document, name) if document else None
    number = (item or {}).get("values", {}).get(label)
    if number is None:
        return "–"
    return f"{number:,.0f}" if number >= 100 else f"{number:.2f}"


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _range(values: list[float], digits: int = 1) -> str:
    if not values:
        return "–"
    middle = _median(values)
    if len(values) == 1:
        return f"{middle:,.{digits}f}"
    return f"{middle:,.{digits}f} ({min(values):,.{digits}f}–{max(values):,.{digits}f})"


def _section(readme: str, heading: str) -> list[str]:
    """A section of the generated README, from its heading to the next, as a quotation."""
    lines = readme.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("## " + heading)), None)
    if start is None:
        return [f"> (the generated README has no section \"{heading}\")"]
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    body = lines[start:end]
    while body and not body[-1].strip():
        body.pop()
    body[0] = "**" + body[0].removeprefix("## ") + "**"  # a heading of its own would enter the page's outline
    return [("> " + line).rstrip() for line in body]


# ------------------------------------------------------------------------------------- the page


def render(args: argparse.Namespace, study: Study, facts: dict[str, Any], paired: list[Comparison],
           capacity: list[Comparison], replays: dict[str, list[dict[str, Any]]], replay_comparisons: list[Comparison],
           load_before: tuple[float, ...], load_after: tuple[float, ...], seconds: float) -> str:
    built, traced = facts["built"], facts["traced"]
    host = traced.get("host") or {}
    disk = host.get("workdir_disk") or {}
    trace = traced.get("trace") or {}
    engines = {}
    for document in [built, traced, *(d for docs in replays.values() for d in docs)]:
        engine = document.get("engine") or {}
        engines[engine.get("engine_version")] = engine.get("version")
    for comparison in [*paired, *capacity]:
        for side in (comparison.document or {}).get("sides", []):
            match = re.search(r"\(([0-9.]+)\)", side.get("name", ""))
            if match:
                engines.setdefault(match.group(1), "")
    builds = "; ".join(f"{version}: {build}" if build else str(version)
                       for version, build in sorted(engines.items(), key=lambda kv: str(kv[0])))
    units = sorted(facts["units"], key=lambda unit: -unit[1])
    top_units = [name for name, _ in units[:3]]
    lines = [
        "# Case study: your own application on Firebird 3.0, 4.0 and 5.0",
        "",
        f"*Written by `benchmarks/case_study_application.py` on {time.strftime('%Y-%m-%d')} ({args.pairs} pairs "
        f"per comparison of the generated workload, {args.repeats} replays per engine; {seconds / 60:.0f} minutes); "
        "re-run it to measure again on your machine.*",
        "",
        "The question an application team brings is \"will *our* system be faster on Firebird 5, on this",
        "server, with these settings?\" — a question about its data and its statements, which no built-in",
        "workload answers. fbbench's answer starts from two things the team has: a gbak backup of the",
        "database and a trace of the application at work. From the trace it makes a workload (the traced",
        "transaction shapes, their mix, their parameters fitted to the traced values, their think times)",
        "and a replay (every traced statement with its traced values, at the traced times), runs both on",
        "each engine against the backup restored by that engine, and compares them with `fbbench compare`.",
        "Here docflow — OLTP-EMUL's document flow, the Firebird project's own load test, built into",
        "fbbench — stands in for the application. A difference whose interval includes no change is",
        "written \"not resolved\", with the interval — never a verdict.",
        "",
        "## Conditions",
        "",
        f"- host: {host.get('cpu_count')} CPUs ({host.get('cpu_model')}), "
        f"{(host.get('memory_bytes') or 0) / 2**30:.0f} GiB, {host.get('os')}, kernel {host.get('kernel')}; the "
        f"work directory on {disk.get('device')} ({disk.get('filesystem')}, {disk.get('medium', 'medium unknown')}); "
        f"load average before {', '.join(f'{v:.1f}' for v in load_before)}, after "
        f"{', '.join(f'{v:.1f}' for v in load_after)} (the machine is shared)",
        f"- engines (embedded, from PyPI): {builds}; every setting the engine's default (SuperServer, page "
        f"buffers {traced['database']['page_buffers']}, forced writes "
        f"{'on' if traced['database']['forced_writes'] else 'off'})",
        f"- the application's database: docflow with {args.connections} workers and {args.init_rounds} initial "
        f"rounds each, built by Firebird {built['engine']['engine_version']} (page size "
        f"{built['database']['page_size']}, ODS {built['database']['ods']}, "
        f"{built['database']['size_bytes'] / 2**20:.1f} MiB); its gbak backup {facts['backup_bytes'] / 2**20:.1f} MiB",
        f"- the application at work: docflow on {args.connections} attachments (each its own worker) at "
        f"{args.rate:g} units/s in all, open loop, on the backup restored by Firebird "
        f"{traced['engine']['engine_version']}, traced for {args.trace_seconds} s",
        f"- the generated workload: {args.connections} attachments (the traced number), warm-up {args.warmup}, "
        f"measured {args.duration}, {args.pairs} time-shared pairs per comparison (both runs of a pair at the same "
        "time on their own restored copies, their engines taking turns of 0.1 s, each run timed by its own turns)",
        f"- the replay: order {args.order}, speed {args.speed:g}, {args.repeats} replays per engine (one series "
        "each, every replay on a fresh copy of the backup restored by that engine), compared as series",
        "",
        "## Commands",
        "",
        "Run in an empty directory (`FBBENCH_HOME` pointed at it); the spec files of step 4:",
        "",
    ]
    for name, text in study.specs.items():
        lines += [f"`{name}`:", "", "```toml", text.rstrip(), "```", ""]
    lines += ["```bash", *study.commands, "```", ""]
    lines += _step_database(built, facts)
    lines += _step_application(traced, trace, args)
    lines += _step_workload(facts)
    if "workload" in args.parts:
        lines += _step_paired(paired, top_units)
    if "capacity" in args.parts:
        lines += _step_paired(capacity, top_units, capacity=True)
    if "replay" in args.parts:
        lines += _step_replay(replays, replay_comparisons, args)
    lines += _reading(args, paired, replays)
    if study.notes:
        lines += ["", "## What did not go as planned", "", *[f"- {note}" for note in study.notes]]
    return "\n".join(lines) + "\n"


def _step_database(built: dict[str, Any], facts: dict[str, Any]) -> list[str]:
    return [
        "## 1. The application's database",
        "",
        f"`fbbench run docflow --engine 3.0 … --keep-database` builds docflow's population on Firebird "
        f"{built['engine']['engine_version']} (and runs one unit on it: the database a kept run leaves is an "
        f"application's database that has seen some work), {built['database']['size_bytes'] / 2**20:.1f} MiB. "
        "A user would run `gbak -b` on their database; the embedded packages ship no gbak binary, so the script "
        "asks the 3.0 engine's own gbak through the services API (`backup`, run in an engine child process), "
        f"which only reads the database: `app.fbk`, {facts['backup_bytes'] / 2**20:.1f} MiB. From here on "
        "every engine restores it itself (`--database-from app.fbk`): a 3.0 backup restored by 5.0 has the "
        "on-disk structure an upgrade would give.",
        "",
    ]


def _step_application(traced: dict[str, Any], trace: dict[str, Any], args: argparse.Namespace) -> list[str]:
    restored = traced.get("database") or {}
    headline = traced.get("headline") or {}
    return [
        "## 2. The application at work",
        "",
        f"docflow on the restored backup (Firebird {traced['engine']['engine_version']}, ODS {restored.get('ods')}), "
        f"{args.connections} attachments at {args.rate:g} units/s in all: {headline.get('name')} "
        f"{(headline.get('value') or 0):,.0f}{headline.get('unit', '')} over {traced['measure_seconds']:.0f} s. "
        f"The trace (`--trace app.trace`, a user trace session through the engine's services manager, with no "
        f"time threshold and no length limit): {trace.get('transactions', 0):,} transactions "
        f"({trace.get('committed', 0):,} committed, {trace.get('rolled_back', 0):,} rolled back), "
        f"{trace.get('statements', 0):,} statement executions, {trace.get('attachments')} attachments of the "
        f"application over {trace.get('seconds', 0):.1f} s, {(trace.get('bytes') or 0) / 2**20:.1f} MiB; "
        f"suspended by the engine: {len(trace.get('suspended') or []) or 'never'}. fbbench's own attachments "
        "(its monitoring and checks) are in the trace too, named as such, and left out of what follows.",
        "",
    ]


def _step_workload(facts: dict[str, Any]) -> list[str]:
    readme = facts["readme"]
    return [
        "## 3. The workload from the trace",
        "",
        f"`fbbench workload from-trace app.trace -o myapp` said: \"{facts['made'].splitlines()[0].strip()}\". The "
        f"directory holds `workload.toml` ({len(facts['units'])} units, one per traced transaction shape, weighted "
        "by their traced counts) and a `README.md`; its two sections on what the workload represents, verbatim "
        "(their headings in bold):",
        "",
        *_section(readme, "What it covers"),
        "",
        *_section(readme, "What it leaves out"),
        "",
    ]


def _step_paired(paired: list[Comparison], top_units: list[str], capacity: bool = False) -> list[str]:
    lines = [
        ("## 4b. The generated workload on 3.0, 4.0 and 5.0, at the engine's capacity" if capacity else
         "## 4. The generated workload on 3.0, 4.0 and 5.0"),
        "",
        "`fbbench compare --paired A.toml B.toml --axis engine`: units per minute of each side (the geometric "
        "mean over the pairs), B/A with its 95 % interval over the pairs' ratios. The headline is the generated "
        "workload's own: committed units per minute. " + (
            "Here with `--scale think=off` (the `-capacity` spec files): no think time, every attachment runs its "
            "units back to back, so the units per minute are what the engine can do with this mix." if capacity else
            "At the traced pace: each unit is followed by its traced think time, so the units per minute follow "
            "the application's pace and the engines differ mostly in latency."),
        "",
        "| comparison | pairs | A units/min | B units/min | B against A |",
        "|---|---|---|---|---|",
    ]
    for comparison in paired:
        document = comparison.document
        if document is None:
            lines.append(f"| {comparison.title} | – | – | – | failed: {comparison.failure} |")
            continue
        complete = (document.get("pairing") or {}).get("complete", "–")
        lines.append(f"| {comparison.title} | {complete} | {value(document, 'headline', 'A')} | "
                     f"{value(document, 'headline', 'B')} | {said(document, 'headline')} |")
    lines += ["", f"The latency of the three most frequent transaction shapes ({', '.join(f'`{u}`' for u in top_units)}"
              "), p50 and p95 in ms, B against A:", "",
              "| comparison | unit | A p50 | B p50 | p50 B against A | A p95 | B p95 | p95 B against A |",
              "|---|---|---|---|---|---|---|---|"]
    for comparison in paired:
        if comparison.document is None:
            continue
        for unit in top_units:
            p50, p95 = f"{unit} p50", f"{unit} p95"
            lines.append(f"| {comparison.title} | `{unit}` | {value(comparison.document, p50, 'A')} | "
                         f"{value(comparison.document, p50, 'B')} | {said(comparison.document, p50)} | "
                         f"{value(comparison.document, p95, 'A')} | {value(comparison.document, p95, 'B')} | "
                         f"{said(comparison.document, p95)} |")
    lines += ["", *_lint_lines(paired), ""]
    return lines


def _lint_lines(comparisons: list[Comparison]) -> list[str]:
    """The comparisons' lint warnings and errors, one line per rule."""
    by_rule: dict[str, tuple[dict[str, Any], int]] = {}
    for comparison in comparisons:
        for finding in (comparison.document or {}).get("lint", []):
            if finding["severity"] in ("error", "warning"):
                first, count = by_rule.get(finding["rule"], (finding, 0))
                by_rule[finding["rule"]] = (first, count + 1)
    if not by_rule:
        return ["The lint found no warning and no error in these comparisons."]
    return ["What the lint said about these comparisons (the first finding of each rule):", ""] + [
        f"- {rule} ({first['severity']}): {first['message']}" + (f" (and {count - 1} more like it)" if count > 1
                                                                  else "")
        for rule, (first, count) in by_rule.items()]


def _replay_rates(documents: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    transactions, statements = [], []
    for document in documents:
        replay, seconds = document.get("replay") or {}, document.get("measure_seconds") or 0
        if seconds and replay:
            transactions.append(replay["transactions"]["replayed"] / seconds)
            statements.append(replay["statements"]["executed"] / seconds)
    return transactions, statements


def _step_replay(replays: dict[str, list[dict[str, Any]]], comparisons: list[Comparison],
                 args: argparse.Namespace) -> list[str]:
    lines = [
        "## 5. The replay on 3.0, 4.0 and 5.0",
        "",
        f"`fbbench replay app.trace --database-from app.fbk --engine V --repeat {args.repeats}`: every traced "
        "transaction with its traced TPB, every statement with its traced values, one attachment per traced "
        f"attachment, {'at the traced times' if args.order == 'timed' else 'in the traced order'}"
        f"{'' if args.speed == 1 else f' at {args.speed:g} × speed'}. Each engine's figures, median over its "
        "replays (min–max in brackets):",
        "",
        "| engine | replays | transactions replayed / planned | transactions/s | statements/s | lag p50 ms | "
        "lag p95 ms | lag max ms | divergences (each replay) | by kind |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for version, documents in replays.items():
        transactions, statements = _replay_rates(documents)
        done = [d["replay"] for d in documents if d.get("replay")]
        if not done:
            lines.append(f"| {version} | 0 | – | – | – | – | – | – | – | – |")
            continue
        kinds: dict[str, int] = {}
        for replay in done:
            for kind, count in (replay.get("divergences_by_kind") or {}).items():
                kinds[kind] = kinds.get(kind, 0) + count
        lines.append(
            f"| {version} | {len(done)} | "
            f"{', '.join(str(r['transactions']['replayed']) for r in done)} / {done[0]['transactions']['planned']} | "
            f"{_range(transactions)} | {_range(statements)} | {_range([r['lag_ms']['p50'] for r in done], 2)} | "
            f"{_range([r['lag_ms']['p95'] for r in done], 2)} | {_range([r['lag_ms']['max'] for r in done], 1)} | "
            f"{', '.join(str(r['divergences']) for r in done)} | "
            f"{', '.join(f'{kind} × {count}' for kind, count in sorted(kinds.items())) or '–'} |")
    lines += [""]
    lines += _templates(replays)
    lines += _divergence_examples(replays)
    lines += ["### The replay series compared", "",
              f"`fbbench compare SERIES_A SERIES_B --axis engine` ({args.repeats} replays a side; the interval is "
              "over the repeats, runs taken one after the other). A timed replay keeps the trace's pace, so its "
              "units per minute (the headline) are the trace's unless an engine falls behind.", "",
              "| comparison | A units/min | B units/min | units/min B against A |", "|---|---|---|---|"]
    for comparison in comparisons:
        if comparison.document is None:
            lines.append(f"| {comparison.title} | – | – | failed: {comparison.failure} |")
            continue
        lines.append(f"| {comparison.title} | {value(comparison.document, 'headline', 'A')} | "
                     f"{value(comparison.document, 'headline', 'B')} | {said(comparison.document, 'headline')} |")
    lines += ["", "The comparisons' other ratios — each transaction shape's latency — time a replayed transaction "
              "from its start to its commit, which waits for the commit's traced moment: they are mostly the "
              "trace's schedule, not the engine's work (the comparison's JSON and HTML list them). The engine's "
              "part is in the statement latencies and the lag above."]
    lines += ["", *_lint_lines(comparisons), ""]
    return lines


def _templates(replays: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Each statement template's p50 per engine (median over its replays) beside the traced p50: the
    five that took the most of the traced engine time."""
    first = next((d["replay"] for docs in replays.values() for d in docs if d.get("replay")), None)
    if first is None:
        return []
    rows = sorted(first["statement_latency"], key=lambda r: -(r["traced_ms"]["mean"] or 0) * r["traced_ms"]["count"])
    top = [row["sql"] for row in rows[:5]]
    traced = {row["sql"]: row["traced_ms"] for row in first["statement_latency"]}
    lines = ["Latency per statement template against the traced latency (the five templates with the most traced "
             "engine time; p50 in ms, median over each engine's replays; the trace's own times are whole "
             "milliseconds, from its START and FINISH stamps):", "",
             "| statement | executions | traced p50 (5.0, while traced) | " + " | ".join(replays) + " |",
             "|---|---|---|" + "---|" * len(replays)]
    for sql in top:
        cells = []
        for documents in replays.values():
            values = [row["latency_ms"]["p50"] for d in documents if d.get("replay")
                      for row in d["replay"]["statement_latency"] if row["sql"] == sql]
            cells.append(_range(values, 2))
        shown = sql if len(sql) <= 60 else sql[:57] + "…"
        lines.append(f"| `{shown}` | {traced[sql]['count']} | {traced[sql]['p50']:g} | {' | '.join(cells)} |")
    return [*lines, ""]


def _divergence_examples(replays: dict[str, list[dict[str, Any]]]) -> list[str]:
    for version, documents in replays.items():
        for document in documents:
            listed = (document.get("replay") or {}).get("divergence_list") or []
            if listed:
                item = listed[0]
                return [f"A divergence, the first of one replay on {version}: {item['kind']} in traced transaction "
                        f"{item.get('transaction')} (attachment {item.get('attachment')}): "
                        f"{json.dumps(item.get('detail'), default=str)}. Each replay lists every one, with what "
                        "was traced and what was replayed (`replay.divergence_list` in its JSON).", ""]
    return ["No replay diverged from the trace.", ""]


def _reading(args: argparse.Namespace, paired: list[Comparison], replays: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines = ["## Reading it", ""]
    lines.append("- **What the generated workload is.** Its units are the traced transaction shapes with their "
                 "traced mix, and its think times are the traced gaps between an attachment's transactions: run "
                 "closed-loop on the traced number of attachments, its units per minute are set by the traced "
                 "pace as well as by the engine, while each shape's latency is the engine's time alone. "
                 "`--scale think=off` asks the other question — how many of these transactions the engine does "
                 "flat out — which the capacity comparisons answer.")
    lines.append("- **What the replay is.** The same statements with the same values at the same moments: what "
                 "one engine did with exactly the traced session. Its divergences say where the replay stopped "
                 "doing what was traced (the trace's order of commits across attachments is not the engine's "
                 "order, so a transaction that read what another committed a moment before may change other "
                 "rows); a replay that diverges early measures something else.")
    lines.append("- **Many ratios, one verdict.** fbbench's verdict is the headline's; every other ratio is "
                 "judged at 95 % on its own, so about one in twenty resolves by chance alone.")
    if "workload" in args.parts:
        lines.append("- **Time-shared pairs measure runs that had half the machine each** (the conditions say so: "
                     "`load.timeshare`); their figures compare with each other, not with a run that had the machine "
                     "alone. The replays ran one after the other, each with the machine to itself (shared with "
                     "whatever else it was doing: see the load average).")
    if args.pairs < 6 or args.repeats < 3:
        lines.append(f"- **Too few to resolve much**: {args.pairs} pairs and {args.repeats} replays per engine "
                     "(this page was written at a small scale; the script's defaults are 6 and 3).")
    return lines


if __name__ == "__main__":
    main()

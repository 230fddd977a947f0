"""A workload directory from a trace of an application (``fbbench workload from-trace``).

The directory is an ordinary workload (docs/workload-format.md) plus a README saying what it
represents of the trace and what it leaves out, and why. It has no scripts and no load steps: it
runs on the application's own database, restored from its backup (``--database-from``).

- Each transaction shape (:mod:`fbbench.trace.shapes`) becomes a unit whose weight is its count
  in the trace; the SQL text is the application's, exactly.
- Each parameter becomes a generator fitted to what the trace saw (:func:`fit`); a value given to
  an earlier statement of the transaction and again to a later one becomes one ``let`` both name
  (:func:`_flows`). A value taken from what a statement returned cannot: the trace does not log
  results, and the format cannot give one to a later statement.
- A shape any of whose executions cannot be represented exactly — a blob (the trace never holds
  its content), a type the trace prints as unknown, a value or an argument list the trace cut,
  DDL, transaction control, SQL the format would substitute into — is left out whole, with its
  share of the trace, rather than run with stand-in values.
- Think time comes from the gaps between an attachment's transactions; keying time does not (a
  trace cannot tell the time before a transaction from the time after the one before).
- Connections are not part of a workload: the README suggests the traced median and peak.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fbbench import __version__
from fbbench.errors import FbbenchError
from fbbench.trace.model import Execution, Trace, Transaction
from fbbench.trace.shapes import DDL, TRANSACTION_CONTROL, Selection, Shape, first_word, group, select
from fbbench.workloads import trace_readme
from fbbench.workloads.from_trace_model import (
    FLOW_CHANCE,
    FLOW_SHARE,
    ISOLATION,
    LOW_CARDINALITY,
    NO_THINK_BELOW,
    PLACEHOLDER,
    SAMPLE,
    USER_EXCEPTION,
    Fitted,
    Generated,
    Let,
    Unit,
)
from fbbench.workloads.generators import Generator


def fit(observations: Sequence[tuple[int, tuple[str, Any]]], attachments: int = 0) -> Fitted:
    """A generator for one parameter from (attachment, (kind, value)) as the trace saw them;
    ``attachments``: how many application attachments the trace had."""
    values = [value for _attachment, value in observations]
    total = len(values)
    kinds = {kind for kind, _value in values if kind != "null"}
    if "text" in kinds and kinds != {"text"}:  # an INT128 beyond BIGINT among integers: all as text
        values = [(kind if kind == "null" else "text", None if kind == "null" else str(value))
                  for kind, value in values]
        kinds = {"text"}
    seen = Counter(value for _kind, value in values)
    nulls = seen.get(None, 0)
    if len(seen) == 1:
        only = next(iter(seen))
        return Fitted(Generator("const", (only,)), "the one value seen" if only is not None else "always NULL")
    if kinds == {"int"} and not nulls:
        per_attachment: dict[int, set[Any]] = defaultdict(set)
        for attachment, (_kind, value) in observations:
            per_attachment[attachment].add(value)
        kept = [next(iter(v)) for v in per_attachment.values() if len(v) == 1]
        # An attachment's own number (a worker, a branch): each kept one, none shared, all in 1..n.
        if len(per_attachment) > 1 and len(kept) == len(per_attachment) and len(set(kept)) == len(kept) and \
                min(kept) >= 1 and max(kept) <= max(attachments, len(kept)):
            return Fitted(Generator("home", (max(kept),)),
                          f"each traced attachment kept a value of its own, in 1..{max(kept)}: each attachment "
                          "keeps one (home)")
    if len(seen) <= LOW_CARDINALITY and len(seen) <= total / 2:  # few values, each seen again and again
        if kinds == {"int"} and not nulls and _uniform_range(seen):
            low, high = min(seen), max(seen)
            return Fitted(Generator("uniform", (low, high)),
                          f"every whole number from {low} to {high} seen, about as often each (uniform)")
        return Fitted(Generator("choice", tuple(_weighted(seen, SAMPLE))),
                      f"the {len(seen)} values seen, as often as seen" + (" (NULL among them)" if nulls else ""))
    if kinds == {"int"} and nulls <= 0.01 * total:
        numbers = [value for _kind, value in values if value is not None]
        dropped = f"; {nulls} NULL(s) not drawn" if nulls else ""
        return Fitted(Generator("uniform", (min(numbers), max(numbers))),
                      f"over the range seen ({len(seen):,} distinct values){dropped}")
    ordered = sorted((value for _kind, value in values if value is not None),
                     key=lambda v: (0, v, "") if isinstance(v, int | float) else (1, 0, str(v)))
    slots = min(SAMPLE, len(ordered))
    sample: list[Any] = [ordered[int((i + 0.5) * len(ordered) / slots)] for i in range(slots)]
    sample += [None] * round(nulls / total * slots)
    return Fitted(Generator("choice", tuple(sample)),
                  f"{slots} of the {len(seen):,} distinct values seen, spread over their range"
                  + (", NULL as often as seen" if nulls else ""))


UNIFORM_P = 0.01  # a chi-square test of equal counts below this: the values were not drawn evenly


def _uniform_range(seen: Counter[Any]) -> bool:
    """Whether whole numbers seen look drawn by uniform(low, high): every number of the range seen,
    and their counts no further from equal than chance allows (chi-square, p ≥ UNIFORM_P). An
    application's uniform(1, 5) was listed as a 100-element choice(…) of its traced draws."""
    low, high = min(seen), max(seen)
    if high - low + 1 != len(seen) or len(seen) < 2:
        return False
    from scipy.stats import chisquare  # only here: the workload tools start without scipy

    return bool(chisquare(list(seen.values())).pvalue >= UNIFORM_P)


def _weighted(seen: Counter[Any], slots: int) -> list[Any]:
    """Each value listed as often as it was seen, the counts divided by their greatest common
    divisor, or scaled to about ``slots`` entries (each value at least once) when more."""
    import math

    total = sum(seen.values())
    divisor = math.gcd(*seen.values())
    scale = (1 / divisor) if total / divisor <= slots else slots / total
    listed: list[Any] = []
    for value, count in seen.most_common():
        listed += [value] * max(1, round(count * scale))
    return listed


def _problems(shape: Shape) -> list[str]:
    """Why the shape cannot be a unit exactly (empty: it can)."""
    found: set[str] = set()
    for sql in shape.sqls:
        word = first_word(sql)
        if word in DDL:
            found.add(f"DDL ({word})")
        elif word in TRANSACTION_CONTROL:
            found.add(f"transaction control as SQL ({word})")
        if PLACEHOLDER.search(sql):
            found.add("SQL text holding ${…}, which the workload format substitutes")
    for transaction in shape.transactions:
        for execution in transaction.statements:
            for problem in execution.problems():
                found.add(re.sub(r"^parameter \d+", "a parameter", problem))
            for param in execution.params:
                if param.text and PLACEHOLDER.search(param.text):
                    found.add("a value holding ${…}, which the workload format substitutes")
    return sorted(found)


TRACE_DIGITS = 4  # a trace's timestamps are to 0.1 ms (…T10:00:00.1234)


def _gaps(selection: Selection) -> tuple[dict[int, float], dict[int, float]]:
    """Per transaction id, the gap to its attachment's next transaction, and from its previous one."""
    gaps: dict[int, float] = {}
    before: dict[int, float] = {}
    for attachment in selection.attachments:
        done = sorted((t for t in attachment.transactions if t.started_at is not None and t.ended_at is not None),
                      key=lambda t: t.started_at or 0.0)
        for current, following in itertools.pairwise(done):
            assert current.ended_at is not None and following.started_at is not None
            # The trace's times are to 0.1 ms; the difference of two epoch floats is not: a gap of
            # exactly 5 ms came out as 4.9999… ms, below NO_THINK_BELOW, and printed as "5.00 ms".
            gap = round(following.started_at - current.ended_at, TRACE_DIGITS)
            gaps[current.id] = before[following.id] = max(0.0, gap)
    return gaps, before


def _runs(transaction: Transaction) -> list[list[Execution]]:
    """The transaction's executions, consecutive executions of one SQL text together."""
    runs: list[list[Execution]] = []
    for execution in transaction.statements:
        if not runs or runs[-1][0].sql != execution.sql:
            runs.append([])
        runs[-1].append(execution)
    return runs


def _by_chance(trials: int, matches: int, chance: float) -> float:
    """How likely ``matches`` or more equalities in ``trials`` are for two values drawn apart that
    are equal with probability ``chance``: the binomial tail."""
    if chance >= 1:
        return 1.0
    if chance <= 0:
        return 0.0 if matches else 1.0
    total = 0.0
    for x in range(matches, trials + 1):
        total += math.exp(math.lgamma(trials + 1) - math.lgamma(x + 1) - math.lgamma(trials - x + 1)
                          + x * math.log(chance) + (trials - x) * math.log1p(-chance))
    return min(1.0, total)


def _flows(shape: Shape, fitted: list[list[Fitted]]) -> tuple[list[Let], list[str]]:
    """Where a parameter of a later statement was given a parameter value of an earlier statement
    of the same transaction. A flow becomes a let (:data:`FLOW_SHARE`, :data:`FLOW_CHANCE`) when:
    the earlier statement ran once in each transaction (so "its value" is one value); the later
    parameter was equal to it (the same kind and value, NULL to NULL) in at least 99 % of its
    executions; and that many equalities would be less likely than 1 in 1,000 between values
    drawn apart from what each parameter was given (the binomial tail at the chance two such
    draws are equal) — so a constant, or a few values that often coincide, is no flow. Returns
    the lets and, for the flows that are not, what the trace showed."""
    runs_per_transaction = [_runs(t) for t in shape.transactions]
    counts = [len(params) for params in fitted]
    once = [all(len(runs[i]) == 1 for runs in runs_per_transaction if len(runs) > i) for i in range(len(counts))]
    trials: Counter[tuple[int, int]] = Counter()
    matches: dict[tuple[int, int], Counter[tuple[int, int]]] = defaultdict(Counter)
    any_earlier: Counter[tuple[int, int]] = Counter()
    seen: dict[tuple[int, int], Counter[Any]] = defaultdict(Counter)
    for runs in runs_per_transaction:
        given: dict[Any, set[tuple[int, int]]] = defaultdict(set)  # value → the earlier (statement, parameter)s
        for i, run in enumerate(runs[:len(counts)]):
            for execution in run:
                for p in range(counts[i]):
                    value = execution.params[p].replay_value()
                    seen[i, p][value] += 1
                    if i:
                        trials[i, p] += 1
                        sources = given.get(value, set())
                        any_earlier[i, p] += bool(sources) and value[1] is not None
                        for source in sources:
                            matches[i, p][source] += 1
            for execution in run:
                for p in range(counts[i]):
                    given[execution.params[p].replay_value()].add((i, p))
    root: dict[tuple[int, int], tuple[int, int]] = {}
    evidence: dict[tuple[int, int], list[str]] = defaultdict(list)
    reported = []
    for (i, p), n in sorted(trials.items()):
        found = None
        for (j, q), k in sorted(matches[i, p].items()):
            if not once[j] or k < FLOW_SHARE * n:
                continue
            earlier, later = seen[j, q], seen[i, p]
            chance = sum(count / earlier.total() * later[value] / later.total() for value, count in earlier.items())
            if _by_chance(n, k, chance) < FLOW_CHANCE:
                found = (j, q, k)
                break
        if found:
            j, q, k = found
            root[i, p] = root.get((j, q), (j, q))
            evidence[root[i, p]].append(f"statement {i + 1}, parameter {p + 1} was given the value of statement "
                                        f"{j + 1}, parameter {q + 1} in {k:,} of its {n:,} traced executions")
        elif len(seen[i, p]) > 1 and any_earlier[i, p] >= 0.5 * n:
            best = max(matches[i, p].items(), key=lambda item: (item[1], -item[0][0], -item[0][1]))
            (j, q), k = best
            why = (f"statement {j + 1} ran more than once in a transaction, so its value is not one value"
                   if not once[j] and k >= FLOW_SHARE * n else
                   f"below the {FLOW_SHARE:.0%} a let needs" if k < FLOW_SHARE * n else
                   "no more often than values drawn apart would be")
            reported.append(f"statement {i + 1}, parameter {p + 1}: equal to statement {j + 1}'s parameter {q + 1} in "
                            f"{k:,} of {n:,} executions ({k / n:.0%}; {why}): drawn independently")
    lets = []
    for source in sorted(set(root.values())):
        uses = [source, *sorted(target for target, r in root.items() if r == source)]
        j, q = source
        lets.append(Let(f"s{j + 1}_p{q + 1}", fitted[j][q], uses, evidence[source]))
    return lets, reported


def _rollback_exceptions(shape: Shape) -> list[str]:
    names: Counter[str] = Counter()
    for transaction in shape.transactions:
        if transaction.end != "rollback":
            continue
        for execution in transaction.statements:
            if execution.error and execution.error[0] == USER_EXCEPTION:
                lines = execution.error[1].splitlines()
                if len(lines) > 1 and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", lines[1].strip()):
                    names[lines[1].strip()] += 1
    return sorted(names)


def generate(trace: Trace, trace_path: Path, name: str) -> Generated:
    selection = select(trace)
    if not selection.complete:
        raise FbbenchError(f"{trace_path} holds no complete transaction of an application",
                           hint="a workload needs transactions that started and ended within the trace, with "
                                "statements; record for longer, or check that the right database was traced")
    shapes = group(selection.complete)
    # The user exceptions the application answered with a rollback, wherever raised: by design for
    # every unit (a unit seen a few times in the trace may not have met its "nothing to do" yet).
    by_design = sorted({name for shape in shapes for name in _rollback_exceptions(shape)})
    gaps, gaps_before = _gaps(selection)
    median_gap = statistics.median(gaps.values()) if gaps else None
    thinks = median_gap is not None and median_gap >= NO_THINK_BELOW
    units: list[Unit] = []
    excluded: list[tuple[Shape, list[str]]] = []
    for shape in shapes:
        problems = _problems(shape)
        if problems:
            excluded.append((shape, problems))
            continue
        fitted = []
        for index, sql in enumerate(shape.sqls):
            executions = [e for run in shape.slot(index) for e in run]
            count = len(executions[0].params)
            if any(len(e.params) != count for e in executions):
                raise FbbenchError(f"{trace_path}: statement {sql[:60]!r} was traced with different numbers of "
                                   "parameters")
            fitted.append([fit([(e.attachment, e.params[p].replay_value()) for e in executions],
                               len(selection.attachments)) for p in range(count)])
        shape_gaps = [gaps[t.id] for t in shape.transactions if t.id in gaps]
        think = round(statistics.mean(shape_gaps), 3) if thinks and shape_gaps else 0.0
        lets, flows = _flows(shape, fitted)
        before = [gaps_before[t.id] for t in shape.transactions if t.id in gaps_before]
        units.append(Unit(shape, fitted, by_design, think, lets, flows,
                          statistics.mean(before) if before else None))
    if not units:
        reasons = sorted({problem for _shape, problems in excluded for problem in problems})
        raise FbbenchError(f"no transaction of {trace_path} can be a workload unit: {'; '.join(reasons)}")
    digest = hashlib.sha256(trace_path.read_bytes()).hexdigest()
    toml = _workload_toml(name, trace_path, units, selection)
    readme = trace_readme.readme(name, trace, trace_path, digest, selection, units, excluded, sorted(gaps.values()))
    covered = sum(len(u.shape.transactions) for u in units)
    return Generated({"workload.toml": toml, "README.md": readme},
                     {"units": len(units), "transactions": len(selection.complete), "covered": covered,
                      "excluded_shapes": len(excluded), "sha256": digest})


# ---------------------------------------------------------------------------------- writing


def _toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's; DEL must be escaped too)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_sql(sql: str) -> str:
    """Multi-line SQL as a literal block, readable and exact; anything else as a basic string."""
    plain = "\n" in sql and "'''" not in sql and not sql.endswith("'") and not sql.startswith("\n") \
        and not any((ord(ch) < 32 and ch not in "\n\t") or ord(ch) == 127 for ch in sql)
    return f"'''\n{sql}'''" if plain else _toml_string(sql)


def _workload_toml(name: str, trace_path: Path, units: list[Unit], selection: Selection) -> str:
    lines = [f"# Generated by fbbench {__version__} from the trace {trace_path.name} "
             f"({time.strftime('%Y-%m-%d %H:%M')}): see README.md for what it represents and what it leaves out.",
             "# It runs on the traced application's database: fbbench run DIR --database-from BACKUP.fbk", "",
             f"name = {_toml_string(name)}",
             "description = " + _toml_string(f"the application traced in {trace_path.name}: {len(units)} "
                                             "transaction shape(s)"),
             ""]
    if any(unit.think for unit in units):
        lines += ["# think = on: each unit is followed by its traced think time (a negative-exponential wait with",
                  "# that mean), at the application's own pace; --scale think=off: no wait, as many units",
                  "# as the engine answers — its capacity, not the application's pace.",
                  "[scale]", "think = \"on\"", ""]
    total = len(selection.complete)
    for unit in units:
        shape = unit.shape
        about = (f"{len(shape.transactions):,} traced transactions ({len(shape.transactions) / total:.1%}); "
                 f"traced as {shape.tpb.text}")
        lines += ["[[units]]", f"name = {_toml_string(shape.name)}", f"description = {_toml_string(about)}",
                  f"weight = {len(shape.transactions)}",
                  f"isolation = {_toml_string(ISOLATION[shape.tpb.isolation])}"]
        if shape.tpb.lock_timeout is not None:
            lines.append(f"lock_timeout = {shape.tpb.lock_timeout}")
        if shape.tpb.read_only:
            lines.append("read_only = true")
        if unit.rollback_on:
            lines.append(f"rollback_on = [{', '.join(_toml_string(n) for n in unit.rollback_on)}]")
        if unit.think:
            lines.append(f"think_time = \"{unit.think:g} * ${{think}}\"")
        if unit.lets:  # a value that flowed from one statement into a later one: drawn once, used by name
            lines.append("let = { " + ", ".join(f"{let.name} = {_toml_string(str(let.fitted.generator))}"
                                                for let in unit.lets) + " }")
        lines.append("statements = [")
        for index, (sql, repeat, fitted) in enumerate(zip(shape.sqls, shape.repeats, unit.fitted, strict=True)):
            params = ", ".join(_toml_string(let.name if (let := unit.let_of(index, position)) else str(f.generator))
                               for position, f in enumerate(fitted))
            item = f"  {{ sql = {_toml_sql(sql)}, params = [{params}]" + (f", repeat = {repeat}" if repeat > 1 else "")
            lines.append(item + " },")
        lines += ["]", ""]
    return "\n".join(lines)


def write(directory: Path, generated: Generated) -> list[Path]:
    """Into a new or empty directory only: a user's files are never overwritten."""
    if directory.exists():
        if not directory.is_dir():
            raise FbbenchError(f"{directory} is not a directory")
        if any(directory.iterdir()):
            raise FbbenchError(f"{directory} is not empty",
                               hint="fbbench writes a generated workload only into a new or empty directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for name, text in generated.files.items():
            path = directory / name
            path.write_text(text)
            written.append(path)
    except OSError as error:
        raise FbbenchError(f"cannot write the workload into {directory}: {error.strerror}") from None
    return written


def verify_readable(directory: Path) -> None:
    """Load what was written with the workload reader: a generated workload that does not load is a bug."""
    from fbbench.workloads.spec import load_workload

    load_workload(str(directory))


# ----------------------------------------------------------------------------------- replays


def replay_workload(trace_path: str | Path) -> tuple[Any, Any, dict[str, Any]]:
    """What a replay of a trace runs, as a workload the runner records like any other: its units
    are the trace's transaction shapes (weighted by their count, SQL only: the values come from
    the trace); its files the units' workload.toml and the trace's facts (replay.json), so that
    replays of one trace compare and replays of two differ. Returns the workload, the replay plan
    (:func:`fbbench.trace.replay.plan`) and the trace's facts."""
    from fbbench.trace.parser import parse_file
    from fbbench.trace.replay import plan as replay_plan
    from fbbench.workloads.spec import stored_workload

    path = Path(trace_path).expanduser()
    plan = replay_plan(parse_file(path))
    facts: dict[str, Any] = {"trace": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                             "bytes": path.stat().st_size,
             "seconds": plan.seconds, "sessions": len(plan.sessions), "actions": plan.actions,
             "templates": len(plan.templates), "skipped": len(plan.skipped), "notes": dict(plan.notes)}
    name = "replay-" + (re.sub(r"[^A-Za-z0-9_.-]+", "_", path.stem) or "trace")
    lines = [f"name = {_toml_string(name)}",
             "description = " + _toml_string(f"a replay of the trace {path.name} (sha256 {facts['sha256'][:16]}…)"), ""]
    for shape in plan.shapes:
        lines += ["[[units]]", f"name = {_toml_string(shape.name)}", f"weight = {len(shape.transactions)}",
                  f"isolation = {_toml_string(ISOLATION[shape.tpb.isolation])}"]
        if shape.tpb.lock_timeout is not None:
            lines.append(f"lock_timeout = {shape.tpb.lock_timeout}")
        if shape.tpb.read_only:
            lines.append("read_only = true")
        lines.append("statements = [" + ", ".join(f"{{ sql = {_toml_sql(sql)} }}" for sql in shape.sqls) + "]")
        lines.append("")
    files = {"workload.toml": "\n".join(lines), "replay.json": json.dumps(facts, indent=2, sort_keys=True)}
    from dataclasses import replace

    return replace(stored_workload(files), files=files), plan, facts

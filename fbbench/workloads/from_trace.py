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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fbbench import __version__
from fbbench.errors import FbbenchError
from fbbench.trace.model import Execution, Trace, Transaction
from fbbench.trace.shapes import DDL, TRANSACTION_CONTROL, Selection, Shape, first_word, group, select
from fbbench.workloads.generators import Generator

LOW_CARDINALITY = 20  # at most this many distinct values: choice of exactly those, as often as seen
SAMPLE = 100  # more distinct values (not integer keys): choice of this many, spread over what was seen
NO_THINK_BELOW = 0.005  # s: a median gap between an attachment's transactions below this is no think time
FLOW_SHARE = 0.99  # a later parameter equal to an earlier one in at least this share of its executions …
FLOW_CHANCE = 0.001  # … where draws apart would be equal that often less likely than this: one let (_flows)
_PLACEHOLDER = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")  # what the workload format would substitute
USER_EXCEPTION = 335544517  # isc_except: a user exception, "exception N" then its name
_ISOLATION = {"snapshot": "snapshot", "serializable": "serializable", "read_committed": "read_committed",
              "read_committed_no_rec_version": "read_committed", "read_consistency": "read_committed"}


@dataclass
class Fitted:
    generator: Generator
    how: str


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
        if _PLACEHOLDER.search(sql):
            found.add("SQL text holding ${…}, which the workload format substitutes")
    for transaction in shape.transactions:
        for execution in transaction.statements:
            for problem in execution.problems():
                found.add(re.sub(r"^parameter \d+", "a parameter", problem))
            for param in execution.params:
                if param.text and _PLACEHOLDER.search(param.text):
                    found.add("a value holding ${…}, which the workload format substitutes")
    return sorted(found)


@dataclass
class Unit:
    shape: Shape
    fitted: list[list[Fitted]]  # per statement, per parameter
    rollback_on: list[str]
    think: float
    lets: list[Let]
    flows: list[str]  # values that flowed sometimes, drawn independently: what the trace showed
    gap_before: float | None = None  # s: the mean gap before the shape's transactions (not written)

    def let_of(self, statement: int, parameter: int) -> Let | None:
        return next((let for let in self.lets if (statement, parameter) in let.uses), None)


@dataclass
class Generated:
    files: dict[str, str]
    summary: dict[str, Any] = field(default_factory=dict)


def _gaps(selection: Selection) -> tuple[dict[int, float], dict[int, float]]:
    """Per transaction id, the gap to its attachment's next transaction, and from its previous one."""
    gaps: dict[int, float] = {}
    before: dict[int, float] = {}
    for attachment in selection.attachments:
        done = sorted((t for t in attachment.transactions if t.started_at is not None and t.ended_at is not None),
                      key=lambda t: t.started_at or 0.0)
        for current, following in itertools.pairwise(done):
            assert current.ended_at is not None and following.started_at is not None
            gaps[current.id] = before[following.id] = max(0.0, following.started_at - current.ended_at)
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


@dataclass
class Let:
    """A value drawn once per execution of a unit and used by name by every parameter in ``uses``
    (statement, parameter; the first is where the trace first saw it)."""

    name: str
    fitted: Fitted
    uses: list[tuple[int, int]]
    evidence: list[str]  # per later use: how often the trace saw the value flow


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
    readme = _readme(name, trace, trace_path, digest, selection, units, excluded, sorted(gaps.values()))
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
    total = len(selection.complete)
    for unit in units:
        shape = unit.shape
        about = (f"{len(shape.transactions):,} traced transactions ({len(shape.transactions) / total:.1%}); "
                 f"traced as {shape.tpb.text}")
        lines += ["[[units]]", f"name = {_toml_string(shape.name)}", f"description = {_toml_string(about)}",
                  f"weight = {len(shape.transactions)}",
                  f"isolation = {_toml_string(_ISOLATION[shape.tpb.isolation])}"]
        if shape.tpb.lock_timeout is not None:
            lines.append(f"lock_timeout = {shape.tpb.lock_timeout}")
        if shape.tpb.read_only:
            lines.append("read_only = true")
        if unit.rollback_on:
            lines.append(f"rollback_on = [{', '.join(_toml_string(n) for n in unit.rollback_on)}]")
        if unit.think:
            lines.append(f"think_time = {unit.think:g}")
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


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[:width - 3] + "…)"


def _first_line(sql: str, width: int = 90) -> str:
    line = " ".join(sql.split())
    return line if len(line) <= width else line[:width - 1] + "…"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def _span(transaction: Transaction) -> float | None:
    if transaction.started_at is None or transaction.ended_at is None:
        return None
    return (transaction.ended_at - transaction.started_at) * 1000


def _concurrency(selection: Selection, trace: Trace) -> tuple[int, int]:
    """The most application attachments attached at once, and the median of how many were over
    the time any was (time-weighted: as many or fewer for at least half of that time). An
    attachment the trace did not see attach was there from its start; one it did not see detach,
    to its end."""
    moments: list[tuple[float, int]] = []
    for attachment in selection.attachments:
        moments += [(attachment.attached_at if attachment.attached_at is not None else 0.0, 1),
                    (attachment.detached_at if attachment.detached_at is not None else trace.seconds, -1)]
    level = peak = 0
    spent: dict[int, float] = defaultdict(float)  # attachments at once → seconds
    previous: float | None = None
    for at, step in sorted(moments, key=lambda m: (m[0], -m[1])):
        if previous is not None and level > 0:
            spent[level] += at - previous
        level += step
        peak = max(peak, level)
        previous = at
    busy = sum(spent.values())
    if busy <= 0:
        return peak, peak
    elapsed = 0.0
    for level in sorted(spent):
        elapsed += spent[level]
        if elapsed >= busy / 2:
            return peak, level
    return peak, peak


def _readme(name: str, trace: Trace, trace_path: Path, digest: str, selection: Selection, units: list[Unit],
            excluded: list[tuple[Shape, list[str]]], gaps: list[float]) -> str:
    executions = [e for t in selection.complete for e in t.statements]
    all_executions = [e for a in selection.attachments for t in a.transactions for e in t.statements]
    covered = {id(e) for u in units for t in u.shape.transactions for e in t.statements}
    engine_ms = sum(e.elapsed_ms or 0 for e in all_executions)
    covered_ms = sum(e.elapsed_ms or 0 for e in executions if id(e) in covered)
    covered_tx = sum(len(u.shape.transactions) for u in units)
    peak, median_attached = _concurrency(selection, trace)
    median_gap = statistics.median(gaps) if gaps else None
    recorded = trace.recorded

    def share(part: float, whole: float) -> str:
        return f"{part / whole:.1%}" if whole else "–"

    out = [f"# {name}: a workload generated from a trace", "",
           f"Generated by fbbench {__version__} on {time.strftime('%Y-%m-%d %H:%M')} from `{trace_path.name}` "
           f"(sha256 {digest[:16]}…). It is an ordinary workload directory (the format is fbbench's "
           "`docs/workload-format.md`): edit it as you like.", "",
           "## Running it", "",
           "It has no scripts and no load steps: it runs on the database the trace was taken on, restored from "
           "its backup into a database fbbench owns (your backup is only read):", "",
           "```bash",
           f"fbbench run {name} --database-from YOUR_BACKUP.fbk --engine 5.0 --connections {max(1, median_attached)}",
           "```", "",
           f"The trace had {len(selection.attachments)} application attachment(s): at most {peak} at once, and "
           f"{median_attached} at once for half of the time any was attached (the median over that time). A "
           "workload does not carry a number of connections — a run has the ones `--connections` gives it — so "
           f"the command above gives the traced median" + (
               f"; `--connections {peak}` runs at the traced peak" if peak > max(1, median_attached) else
               ", which is also the peak") + ". Run it on 3.0, 4.0 and 5.0 and compare with `fbbench compare`.", ""]
    if recorded.get("recorded_by"):
        out += [f"The trace was recorded by {recorded['recorded_by']} with no time threshold and no length limit "
                f"(SQL up to {recorded.get('max_sql_length'):,} characters, arguments up to "
                f"{recorded.get('max_arg_length'):,}, {recorded.get('max_arg_count'):,} of them).", ""]
    else:
        out += ["The trace was not recorded by fbbench: its limits are unknown, so any value that ends in `...` "
                "counts as possibly cut by the trace.", ""]
    out += ["## What it covers", "",
            "| | in the trace | in this workload | share |", "|---|---:|---:|---:|",
            f"| transactions (complete, of the application) | {len(selection.complete):,} | {covered_tx:,} | "
            f"{share(covered_tx, len(selection.complete))} |",
            f"| statement executions (all of the application's) | {len(all_executions):,} | {len(covered):,} | "
            f"{share(len(covered), len(all_executions))} |",
            f"| engine time (the trace's own ms per statement) | {engine_ms:,} ms | {covered_ms:,} ms | "
            f"{share(covered_ms, engine_ms)} |", "",
            f"The trace spans {trace.seconds:,.1f} s from {trace.started}.", "",
            "## Units", "",
            "| unit | transactions | statements | traced as | written as | transaction time p50 / p95 | "
            "rolled back | think time (mean gap after) | mean gap before (not written) |",
            "|---|---:|---|---|---|---:|---:|---:|---:|"]
    total = len(selection.complete)
    for unit in units:
        shape = unit.shape
        spans = sorted(s for t in shape.transactions if (s := _span(t)) is not None)
        p50 = spans[len(spans) // 2] if spans else 0.0
        p95 = spans[min(len(spans) - 1, int(0.95 * len(spans)))] if spans else 0.0
        rolled = sum(1 for t in shape.transactions if t.end.startswith("rollback"))
        written = _ISOLATION[shape.tpb.isolation] + ("" if shape.tpb.lock_timeout is None else
                                                     f", lock_timeout {shape.tpb.lock_timeout}") + \
            (", read only" if shape.tpb.read_only else "")
        statements = "; ".join(f"`{_cell(_first_line(sql, 50))}`" + (f" ×{r}" if r > 1 else "")
                               for sql, r in zip(shape.sqls, shape.repeats, strict=True))
        out.append(f"| `{shape.name}` | {len(shape.transactions):,} ({share(len(shape.transactions), total)}) | "
                   f"{statements} | {_cell(shape.tpb.text)} | {written} | {p50:,.1f} / {p95:,.1f} ms | {rolled:,} | "
                   f"{unit.think:g} s | " + ("–" if unit.gap_before is None else f"{unit.gap_before:.3f} s") + " |")
    out += ["", "### Parameters", ""]
    for unit in units:
        out.append(f"- `{unit.shape.name}`:" + ("" if any(unit.fitted) else " no parameters"))
        for let in unit.lets:
            uses = " and ".join(f"statement {i + 1}, parameter {p + 1}" for i, p in let.uses)
            out.append(f"  - `let {let.name} = {_cell(_short(str(let.fitted.generator)))}` — fitted to the values "
                       f"statement {let.uses[0][0] + 1}, parameter {let.uses[0][1] + 1} was given: {let.fitted.how}; "
                       f"drawn once per execution of the unit and given to {uses}, because "
                       + "; ".join(let.evidence))
        for index, fitted in enumerate(unit.fitted):
            for position, item in enumerate(fitted):
                if shared := unit.let_of(index, position):
                    out.append(f"  - statement {index + 1}, parameter {position + 1}: `{shared.name}` (the let above)")
                    continue
                out.append(f"  - statement {index + 1}, parameter {position + 1}: "
                           f"`{_cell(_short(str(item.generator)))}` — {item.how}")
        if unit.rollback_on:
            out.append(f"  - rolls back by design on {', '.join(unit.rollback_on)} (the application rolled back "
                       "on these user exceptions wherever the trace saw them raised)")
    out += ["", "## What it leaves out, and why", ""]
    left = []
    for shape, problems in excluded:
        left.append(f"- `{shape.name}` ({len(shape.transactions):,} transactions, "
                    f"{share(len(shape.transactions), total)}; `{_cell(_first_line(shape.sqls[0], 60))}`): "
                    + "; ".join(problems))
    for reason, count in sorted(selection.left_out.items()):
        left.append(f"- {count:,} transaction(s): {reason}")
    if selection.own_attachments:
        left.append(f"- fbbench's own attachments ({', '.join(str(a) for a in selection.own_attachments)}): its "
                    "monitoring, population and checks, not the application")
    errors = Counter((e.error[0], " ".join(e.error[1].splitlines()[:2 if e.error[0] == USER_EXCEPTION else 1]))
                     for e in all_executions if e.error)
    for (code, message), count in errors.most_common():
        how = ("a by-design rollback where the unit rolled back on it (rollback_on)" if code == USER_EXCEPTION
               else "counted as a conflict when the workload meets it" if code in (335544345, 335544336, 335544878,
                                                                                   335544451, 335544510)
               else "the workload runs the statement; whether it fails depends on the data")
        left.append(f"- {count:,} statement(s) failed in the trace with {code} ({_cell(message)}): {how}")
    failed_without_error = sum(1 for e in all_executions if e.failed and not e.error)
    if failed_without_error:
        left.append(f"- {failed_without_error:,} statement(s) failed in the trace without an error event")
    for unit in units:
        for flow in unit.flows:
            left.append(f"- `{unit.shape.name}`, {flow} — a let takes a value given to an earlier statement once "
                        f"in each transaction and equal in at least {FLOW_SHARE:.0%} of the executions, more often "
                        "than values drawn apart would be")
    if any(len(unit.shape.sqls) > 1 for unit in units):
        left.append("- values a statement returned (an id an insert returned, a procedure's output): a trace does not "
                    "log them, so a value the application took from one statement's result into a later statement "
                    "cannot be seen as such, and the workload format has no way to give a statement's result to a "
                    "later statement either. Such a parameter is fitted on its own values like any other (its rows "
                    "exist in the restored database only if they did when the backup was made). Values given to an "
                    "earlier statement and again to a later one are found: those are the lets above")
    isolations = Counter(t.tpb.isolation for t in selection.complete)
    if isolations.get("read_consistency"):
        left.append(f"- {isolations['read_consistency']:,} transaction(s) were traced as READ_COMMITTED | "
                    "READ_CONSISTENCY: Firebird 4+ prints that for every read-committed transaction under "
                    "ReadConsistency = 1 (its default), whatever the application asked; they are written as "
                    "read_committed, and the engine you run on decides")
    if isolations.get("read_committed_no_rec_version"):
        left.append(f"- {isolations['read_committed_no_rec_version']:,} transaction(s) ran READ_COMMITTED | "
                    "NO_REC_VERSION, which the workload format does not have: written as read_committed "
                    "(record version)")
    inside = [e.began_at - f.finished_at for t in selection.complete
              for f, e in zip(t.statements, t.statements[1:], strict=False)]
    if inside and statistics.median(inside) >= 0.001:
        left.append(f"- time the application spent between the statements of a transaction (median "
                    f"{statistics.median(inside) * 1000:,.1f} ms) is not represented: a unit runs its statements "
                    "back to back")
    if median_gap is not None:
        p95 = gaps[min(len(gaps) - 1, int(0.95 * len(gaps)))]
        left.append(f"- think time: the median gap between an attachment's transactions was "
                    f"{median_gap * 1000:,.2f} ms (p95 {p95 * 1000:,.2f} ms, {len(gaps):,} gaps)"
                    + (": each unit's think_time is the mean gap after its transactions: fbbench waits a draw "
                       "from a negative exponential with that mean" if median_gap >= NO_THINK_BELOW else
                       f", below {NO_THINK_BELOW * 1000:g} ms: the application did not think, so no think time is "
                       "written"))
        left.append("- keying time: a trace shows one gap between two transactions of an attachment, not whether the "
                    "application spent it before the next transaction (keying: a user filling in a form) or after "
                    "the last (thinking), so no keying_time is written: the whole gap counts as think time of the unit "
                    "before it (above). The Units table lists each unit's mean gap before it too: if you know your "
                    "application spends that time before the unit, move it into the unit's keying_time")
    approximate = sum(1 for e in executions for p in e.params if p.approximate)
    if approximate:
        left.append(f"- {approximate:,} floating-point value(s) were printed by the trace to 7 (float) or 15 (double "
                    "precision) significant digits: the values drawn are those digits")
    if trace.suspended:
        left.append(f"- the engine suspended the trace session ({trace.suspended[0]}): what the application did "
                    "after that is missing")
    if trace.unreadable:
        left.append(f"- {len(trace.unreadable):,} event(s) could not be read, e.g. {_cell(trace.unreadable[0])}")
    out += left or ["Nothing."]
    out += ["", "## Top statements", "", "By executions:", "", _top(all_executions, key="count"), "",
            "By engine time (the trace's own ms per statement):", "", _top(all_executions, key="time"), ""]
    return "\n".join(out)


def _top(executions: Iterable[Any], key: str, limit: int = 10) -> str:
    per_sql: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for execution in executions:
        per_sql[execution.sql][0] += 1
        per_sql[execution.sql][1] += execution.elapsed_ms or 0
    total_count = sum(v[0] for v in per_sql.values())
    total_ms = sum(v[1] for v in per_sql.values())
    index = 0 if key == "count" else 1
    rows = ["| statement | executions | share | engine ms | share | mean ms |", "|---|---:|---:|---:|---:|---:|"]
    for sql, (count, ms) in sorted(per_sql.items(), key=lambda item: -item[1][index])[:limit]:
        rows.append(f"| `{_cell(_first_line(sql, 70))}` | {count:,} | {count / total_count:.1%} | {ms:,} | "
                    f"{(ms / total_ms if total_ms else 0):.1%} | {ms / count:,.2f} |")
    return "\n".join(rows)


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
                  f"isolation = {_toml_string(_ISOLATION[shape.tpb.isolation])}"]
        if shape.tpb.lock_timeout is not None:
            lines.append(f"lock_timeout = {shape.tpb.lock_timeout}")
        if shape.tpb.read_only:
            lines.append("read_only = true")
        lines.append("statements = [" + ", ".join(f"{{ sql = {_toml_sql(sql)} }}" for sql in shape.sqls) + "]")
        lines.append("")
    files = {"workload.toml": "\n".join(lines), "replay.json": json.dumps(facts, indent=2, sort_keys=True)}
    from dataclasses import replace

    return replace(stored_workload(files), files=files), plan, facts

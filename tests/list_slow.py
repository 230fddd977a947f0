"""Write tests/slow.txt, the tests the fast subset (`pytest -m "not slow"`) leaves out, from the
output of a whole-suite run with `--durations=0`.

    .venv/bin/python -m pytest -q --durations=0 tests > /tmp/suite.log
    .venv/bin/python tests/list_slow.py /tmp/suite.log

A test function (all its parameters together, setup and teardown included) that took more than
--seconds (default 8, as the first phase's four workers on two cores time it) is slow;
tests/conftest.py marks the functions listed, and orders the files by the seconds their slow
tests took (written beside each: 0 where a run did not time it), the longest first. A test not
yet listed counts as fast until the list is written again. A module's fixture is timed with its
first test: a module whose first test is slow runs its fixture in the fast subset too, so time
`tests/run.sh --fast` after writing the list.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^(?P<seconds>[0-9.]+)s (?:call|setup|teardown) +(?P<node>tests/\S+?\.py::[^\[\s]+)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="the output of pytest --durations=0")
    parser.add_argument("--seconds", type=float, default=8.0, help="slower than this is slow")
    args = parser.parse_args()
    spent: dict[str, float] = defaultdict(float)
    for line in args.log.read_text().splitlines():
        match = LINE.match(line)
        if match:
            spent[match["node"]] += float(match["seconds"])
    slow = sorted(node for node, seconds in spent.items() if seconds > args.seconds)
    fast = sum(seconds for seconds in spent.values() if seconds <= args.seconds)
    target = Path(__file__).with_name("slow.txt")
    target.write_text("# Written by tests/list_slow.py from a whole-suite run; see its docstring.\n"
                      + "".join(f"{node} {spent[node]:.1f}\n" for node in slow))
    print(f"{len(slow)} slow test functions ({sum(spent[n] for n in slow):,.0f} s), "
          f"{len(spent) - len(slow)} fast ({fast:,.0f} s) -> {target}")


if __name__ == "__main__":
    main()

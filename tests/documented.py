"""A JSON document against the page that documents it (docs/run-result.md, docs/compare-result.md):
every key the page lists is in the document, and the document has no key the page does not list.

A page lists key paths backticked in the first column of its tables: ``a.b`` is a key inside an
object, ``*`` a key chosen by the data, ``[]`` an element of a list; a key documented with nothing
documented inside it is a leaf, whatever it holds (a lint finding's evidence).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def documented_paths(page: Path) -> set[str]:
    """Every key path ``page`` lists (backticked, in the first column of its tables)."""
    paths = set()
    for line in page.read_text().splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            paths |= set(re.findall(r"`([^`]+)`", first))
    return paths


def actual_paths(document: Any, documented: set[str]) -> set[str]:
    """The document's leaf paths, keys chosen by the data written as ``*`` where the page does."""
    prefixes = {p[: i] for p in documented for i in range(len(p) + 1)}
    wholes = {p for p in documented if not any(d.startswith((p + ".", p + "[]")) for d in documented)}
    found: set[str] = set()

    def walk(value: Any, path: str) -> None:
        if path in wholes:
            found.add(path)
        elif isinstance(value, dict) and value:
            for key, item in value.items():
                named = f"{path}.{key}" if path else key
                wild = f"{path}.*" if path else "*"
                walk(item, named if named in prefixes or wild not in prefixes else wild)
        elif isinstance(value, list) and value:
            for item in value:
                walk(item, f"{path}[]")
        elif isinstance(value, dict | list):
            found.add(path + "(empty)")  # documented if anything is documented inside it
        else:
            found.add(path)

    walk(document, "")
    return found


def undocumented_and_missing(actual: set[str], documented: set[str]) -> tuple[list[str], list[str]]:
    """(paths the document has that the page does not list, paths the page lists that it lacks)."""
    def is_documented(path: str) -> bool:
        if path.endswith("(empty)"):
            inside = path.removesuffix("(empty)")
            return any(d == inside or d.startswith((inside + ".", inside + "[]")) for d in documented)
        return path in documented

    undocumented = sorted(path for path in actual if not is_documented(path))
    missing = sorted(path for path in documented
                     if not any(a.removesuffix("(empty)") == path or a.startswith((path + ".", path + "[]"))
                                or path.startswith((a.removesuffix("(empty)") + ".", a.removesuffix("(empty)") + "["))
                                for a in actual))
    return undocumented, missing

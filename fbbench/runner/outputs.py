"""The files a run writes besides the results store, checked before it starts: its --json and
--report (one per repeat of a series) and its --trace, each where paths.output_file allows it."""

from __future__ import annotations

from pathlib import Path

from fbbench import paths
from fbbench.errors import FbbenchError
from fbbench.runner.settings import RunSettings


def numbered_output(path: str | None, repeat_index: int | None) -> str | None:
    """The file a run of a series writes for ``path`` (--json, --report): one per repeat,
    r.json → r-1.json, r-2.json …; ``path`` itself for a single run."""
    if path is None or repeat_index is None:
        return path
    named = Path(path)
    return str(named.with_name(f"{named.stem}-{repeat_index}{named.suffix}"))


def _numbered(settings: RunSettings) -> list[tuple[str, int | None, Path]]:
    repeats = [None] if settings.repeat == 1 else list(range(1, settings.repeat + 1))
    return [(setting, index, Path(named)) for setting in ("json", "report") if getattr(settings, setting)
            for index in repeats if (named := numbered_output(getattr(settings, setting), index))]


def planned_outputs(settings: RunSettings) -> dict[str, Path]:
    """Every file the run (or series) writes, by the setting that names it: --json and --report
    of each repeat, and --trace."""
    traced = [("trace", None, Path(settings.trace))] if settings.trace else []
    return {settings.where(setting) + (f" (repeat {index})" if index else ""): path
            for setting, index, path in _numbered(settings) + traced}


def check_outputs(settings: RunSettings, results: Path) -> None:
    """Every file the run will write must be writable before it starts, or its output would be
    lost; and an existing one must be fbbench's, or it would be lost (paths.output_file)."""
    paths.writable_file(results, "the results store (--results)")
    paths.distinct_outputs(planned_outputs(settings), {"the results store": results})
    for setting, _, path in _numbered(settings):
        paths.output_file(path, settings.where(setting), settings.overwrite)
    if settings.trace:
        if Path(settings.trace).expanduser().exists():
            raise FbbenchError(f"{settings.where('trace')} {settings.trace} already exists",
                               hint="fbbench never overwrites a file; choose a new name")
        paths.writable_file(Path(settings.trace), settings.where("trace"))
    if not settings.report:
        paths.writable_file(paths.default_report(results, "report"), "the report directory")

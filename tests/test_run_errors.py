"""Bad input to ``fbbench run``: a clear one-line error, a non-zero exit, nothing run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import assert_clean_error, run_cli

BANK = Path(__file__).parent / "workloads" / "bank"


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["nosuch"], ["unknown workload 'nosuch'"]),
        ([str(BANK), "--connections", "0"], ["--connections must be at least 1"]),
        ([str(BANK), "--duration", "-1"], ["--duration cannot be negative"]),
        ([str(BANK), "--duration", "5 minutes"], ["--duration must be a duration"]),
        ([str(BANK), "--scale", "accounts=lots"], ["scale 'accounts' must be a number"]),
        ([str(BANK), "--scale", "acounts=5"], ["unknown scale parameter 'acounts'"]),
        ([str(BANK), "--engine", "6.0"], ["unknown engine version '6.0'"]),
        ([str(BANK), "--set", "DefaultDbCachePage=100"], ["unknown firebird.conf key", "DefaultDbCachePages"]),
        ([str(BANK), "--page-size", "1234"], ["invalid page size 1234"]),
        ([str(BANK), "--engine", "127.0.0.1/9:/tmp/x.fdb"], ["password is needed"]),
        # A flag's text is checked as the spec file's is: a tag with a line break broke results list's
        # rows, an empty one said nothing.
        ([str(BANK), "--transactions", "1", "--tag", "two\nlines"], ["--tag", "single line"]),
        ([str(BANK), "--transactions", "1", "--tag", " "], ["--tag", "empty"]),
        ([str(BANK), "--transactions", "1", "--engine", "5.0\nx"], ["--engine must be a single line"]),
    ],
)
def test_bad_run_input(args: list[str], fragments: list[str], tmp_path: Path) -> None:
    results = tmp_path / "results.sqlite"
    result = run_cli("run", *args, "--results", str(results), "--workdir", str(tmp_path / "work"))
    assert_clean_error(result, *fragments)
    assert not results.exists() or "run" not in result.stdout  # nothing was recorded as a run


def test_typo_in_workload_file_names_file_and_line(tmp_path: Path) -> None:
    workload = tmp_path / "bank"
    shutil.copytree(BANK, workload)
    toml = workload / "workload.toml"
    toml.write_text(toml.read_text().replace("per_minute = true", "per_minuet = true"))
    result = run_cli("run", str(workload), "--results", str(tmp_path / "r.sqlite"), "--workdir", str(tmp_path / "w"))
    assert_clean_error(result, "workload.toml:", "unknown key 'per_minuet' in [[metrics]] #1", "per_minute")


def test_spec_file_with_unknown_setting(tmp_path: Path) -> None:
    spec = tmp_path / "run.toml"
    spec.write_text(f'workload = "{BANK}"\nconnections = 2\nwarmpu = "10s"\n')
    result = run_cli("run", "--spec", str(spec), "--results", str(tmp_path / "r.sqlite"))
    assert_clean_error(result, "run.toml:3: unknown setting 'warmpu'")

"""Sizes are read and shown one way (issue 31, item 6): KB, MB, GB, TB = 10^3n bytes, KiB, MiB, GiB,
TiB = 2^10n; a size the user gave is echoed in the units they wrote. ``--target-size 10TB`` was
echoed "9.1 TB", ``100GiB`` "100.0 GB", and 82.97 × 10^9 free bytes were "77.3 GB"."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from fbbench.errors import FbbenchError
from fbbench.sizes import given_size_text, parse_size, size_text
from tests.conftest import assert_clean_error, run_cli


@pytest.mark.parametrize(("given", "size", "echoed"), [
    ("10TB", 10**13, "10 TB"), ("100GB", 10**11, "100 GB"), ("100GiB", 100 * 2**30, "100 GiB"),
    ("1.5G", 1_500_000_000, "1.5 GB"), ("125MiB", 125 * 2**20, "125 MiB"), ("500 kb", 500_000, "500 KB"),
    ("4096", 4096, "4 KiB"),
])
def test_a_given_size_reads_and_reads_back_as_written(given: str, size: int, echoed: str) -> None:
    assert parse_size(given, "--target-size") == size
    assert given_size_text(size) == echoed


def test_sizes_are_shown_in_decimal_units_unless_binary_is_asked() -> None:
    assert size_text(82_970_000_000) == "83.0 GB"
    assert size_text(999) == "999 bytes" and size_text(1000) == "1.0 KB"
    assert size_text(2**30, binary=True) == "1.0 GiB" and size_text(2**30, unit="GiB") == "1.0 GiB"
    assert size_text(25_000_000_000, unit="MB", digits=0) == "25,000 MB"
    with pytest.raises(FbbenchError, match="a size such as"):
        parse_size("10 XB", "--target-size")


@pytest.mark.parametrize(("given", "echoed"), [("10TB", "10 TB"), ("100GiB", "100 GiB")])
def test_a_target_size_too_large_for_the_disk_is_echoed_as_written_with_the_free_space_in_gb(
        given: str, echoed: str, tmp_path: Path) -> None:
    refused = run_cli("run", "scan", "--target-size", given, "--results", str(tmp_path / "r.sqlite"),
                      "--workdir", str(tmp_path / "work"))
    if refused.returncode == 0 or "needs about" not in refused.stderr:
        pytest.skip(f"this disk has room for {given}")
    assert_clean_error(refused, f"--target-size {echoed} needs about")
    free = float(re.search(r"has ([\d,.]+) GB free", refused.stderr).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert free == pytest.approx(shutil.disk_usage(tmp_path).free / 1e9, abs=0.5)

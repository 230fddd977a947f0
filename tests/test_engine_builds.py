"""Engines from any build (issue 27, item 1): ``fbbench engines add NAME PATH`` for an official
tarball, an installation directory or a build's output directory, run embedded from the build's
own files, identified in the run's conditions by version, build and binaries.

The official tarballs are not reachable from this project's machines, so the builds are
assembled from real engine files: the PyPI runtimes' (5.0.4 and 3.0.14), copied (not linked)
into the official layout (``lib/libfbclient.so.2`` and its links, plugins/, intl/, tzdata/,
firebird.msg, firebird.conf …, as Firebird's makeInstallImage.sh lays them out) and packed the way
the official tarball is (an outer directory with install.sh and buildroot.tar.gz, whose
``./opt/firebird/`` holds the installation).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fbbench import paths
from fbbench.engines import EmbeddedEngine, parse_engine
from fbbench.engines import install as installer
from fbbench.errors import FbbenchError
from tests.builds import official_installation, official_tarball
from tests.conftest import assert_clean_error, run_cli

VERSIONS = {"5.0.4": "Firebird-5.0.4.1812-0-linux-x64.tar.gz", "3.0.14": "Firebird-3.0.14.33856-0.amd64.tar.gz"}


# ------------------------------------------------------------------------------- the builds


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The assembled builds, and a home and engine cache of this module's own (registry,
    unpacked copies, binaries): the PyPI runtimes are read from the shared cache first."""
    real_cache = paths.cache_dir()
    runtimes = {version: installer.install(EmbeddedEngine(version), quiet=True) for version in VERSIONS}
    base = tmp_path_factory.mktemp("builds")
    made: dict[str, Any] = {"real_cache": real_cache, "runtimes": runtimes}
    for version, name in VERSIONS.items():
        installation = official_installation(runtimes[version], base / f"opt-{version}" / "firebird", version)
        made[version] = {"installation": installation,
                         "tarball": official_tarball(installation, base / name, name.removesuffix(".tar.gz"))}
    saved = {key: os.environ.get(key) for key in ("FBBENCH_HOME", "FBBENCH_CACHE")}
    os.environ["FBBENCH_HOME"], os.environ["FBBENCH_CACHE"] = str(base / "home"), str(base / "cache")
    made["home"], made["cache"], made["base"] = base / "home", base / "cache", base
    try:
        yield made
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def registry(builds: dict[str, Any]) -> dict[str, Any]:
    file = builds["home"] / "engines.json"
    return json.loads(file.read_text())["engines"] if file.exists() else {}


def fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def conditions_of(results: Path, run_id: str) -> dict[str, str]:
    from fbbench.analysis import conditions
    from fbbench.store import ResultsStore

    with ResultsStore(results) as store:
        return dict(conditions.record(store.load_run(run_id)))


def run_orders(engine: str, work: Path, results: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """A short real fixed-work run; its JSON document."""
    target = work.parent / f"{engine.replace(':', '-')}-{len(list(work.parent.glob('*.json')))}.json"
    done = run_cli("run", "orders", "--transactions", "5", "-c", "1", "--engine", engine, "--workdir", str(work),
                   "--results", str(results), "--json", str(target), "--no-validate", env=env, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    return json.loads(target.read_text())


# --------------------------------------------------------------------- registered and run


@pytest.fixture(scope="module")
def registered(builds: dict[str, Any]) -> dict[str, Any]:
    """The builds registered once for the module: a tarball under two names, the installation it
    was made from, and the 3.0 tarball; the registry entries and what adding the first one said."""
    five, three = builds["5.0.4"], builds["3.0.14"]
    added = run_cli("engines", "add", "fb5-tar", str(five["tarball"]))
    assert added.returncode == 0, added.stderr
    for name, path in (("fb5-tar-again", five["tarball"]), ("fb5-dir", five["installation"]),
                       ("fb3-tar", three["tarball"])):
        assert run_cli("engines", "add", name, str(path)).returncode == 0, name
    return {"output": added.stdout, "entries": registry(builds), "runs": {}}


def run_of(builds: dict[str, Any], registered: dict[str, Any], engine: str) -> dict[str, Any]:
    """The module's run of ``engine`` (made once): its JSON document and its conditions."""
    if engine not in registered["runs"]:
        work, results = builds["base"] / "work", builds["base"] / "results.sqlite"
        env = {"FBBENCH_CACHE": str(builds["real_cache"])} if engine == "5.0" else None  # PyPI's, shared
        document = run_orders(engine, work, results, env)
        assert document["status"] == "completed", (engine, document["failure"])
        registered["runs"][engine] = {"document": document, "conditions": conditions_of(results, document["run_id"])}
    return dict(registered["runs"][engine])


def compared(builds: dict[str, Any], first: str, second: str) -> dict[str, Any]:
    """``fbbench compare``'s conditions for two runs."""
    target = builds["base"] / f"compare-{first}-{second}.json"
    done = run_cli("compare", first, second, "--results", str(builds["base"] / "results.sqlite"),
                   "--json", str(target))
    assert done.returncode == 0, done.stderr
    return dict(json.loads(target.read_text())["conditions"])


def test_engines_add_registers_tarballs_and_installations(builds: dict[str, Any], registered: dict[str, Any]) -> None:
    five, entries = builds["5.0.4"], registered["entries"]
    assert "fb5-tar: Firebird 5.0.4 (build 1812, ODS 13.1) embedded, from the tarball" in registered["output"]
    copy = Path(entries["fb5-tar"]["unpacked"])
    assert copy.parent == builds["home"] / "builds" and entries["fb5-tar-again"]["unpacked"] == str(copy)
    assert entries["fb5-tar"]["directory"] == str(copy / "firebird") and entries["fb5-tar"]["kind"] == "tarball"
    assert entries["fb5-tar"]["source"] == str(five["tarball"]) and entries["fb5-tar"]["mode"] == "embedded"
    assert entries["fb5-dir"]["kind"] == "installation" and entries["fb5-dir"]["directory"] == str(five["installation"])
    assert (entries["fb3-tar"]["version"], entries["fb3-tar"]["build"], entries["fb3-tar"]["ods"]) == \
        ("3.0.14", "LI-V3.0.14.33856 Firebird 3.0", "12.0")
    # Unpacked: the installation only (not the image's /usr/include links); the tarball is untouched.
    assert sorted(p.name for p in copy.iterdir()) == ["firebird", "unpacked.json"]
    assert (copy / "firebird" / "lib" / "libfbclient.so.2").is_symlink()
    assert (copy / "firebird" / "plugins" / "libEngine13.so").read_bytes() == \
        (builds["runtimes"]["5.0.4"] / "plugins" / "libEngine13.so").read_bytes()
    with tarfile.open(five["tarball"]) as original:
        assert any(member.name.endswith("/buildroot.tar.gz") for member in original)
    assert not list(five["tarball"].parent.glob("*/install.sh")) and not list(builds["base"].glob("**/usr/include"))
    # The same files, in a tarball or a directory, are the same binaries; another version's are not.
    assert entries["fb5-tar"]["binaries"] == entries["fb5-dir"]["binaries"] != entries["fb3-tar"]["binaries"]
    # --set is checked against the build's own documented firebird.conf (3.0 has no ReadConsistency).
    from fbbench.engines.runtime import check_conf

    assert check_conf(parse_engine("fb5-tar"), {"readconsistency": "0"}) == {"ReadConsistency": "0"}
    with pytest.raises(FbbenchError, match=r"unknown firebird.conf key 'ReadConsistency' for Firebird 3\.0\.14 "
                       r"embedded \(fb3-tar\)"):
        check_conf(parse_engine("fb3-tar"), {"ReadConsistency": "0"})

    listed = run_cli("engines", "list")
    assert listed.returncode == 0, listed.stderr
    rows = {line.split("│")[1].strip(): line for line in listed.stdout.splitlines() if line.count("│") > 5}
    assert "tarball" in rows["fb5-tar"] and "5.0.4 (1812)" in rows["fb5-tar"]
    assert "embedded (default)" in rows["fb5-tar"]
    assert entries["fb5-tar"]["binaries"][:12] in rows["fb5-tar"]
    folded = "".join(listed.stdout.replace("│", "").split())  # the where column wraps
    assert f"{five['tarball']}(unpackedin{entries['fb5-tar']['directory']})" in folded
    assert "installation" in rows["fb5-dir"] and "3.0.14 (33856)" in rows["fb3-tar"]


def test_two_names_for_the_same_files_run_under_the_same_conditions(builds: dict[str, Any],
                                                                   registered: dict[str, Any]) -> None:
    entries = registered["entries"]
    runs = {name: run_of(builds, registered, name) for name in ("fb5-tar", "fb5-tar-again", "fb5-dir")}
    for name, run in runs.items():
        document = run["document"]
        assert document["engine"]["label"] == f"Firebird 5.0.4 embedded ({name})"
        binaries = document["engine"]["binaries"]
        assert binaries["sha256"] == entries[name]["binaries"] and binaries["source"] == entries[name]["directory"]
    conditions = runs["fb5-tar"]["conditions"]
    assert conditions["protocol"] == "embedded" and conditions["engine.version"] == "5.0.4"
    assert conditions["engine.build"] == "LI-V5.0.4.1812 Firebird 5.0"
    assert conditions["engine.binaries"] == entries["fb5-tar"]["binaries"]
    assert conditions == runs["fb5-tar-again"]["conditions"] == runs["fb5-dir"]["conditions"]
    same = compared(builds, runs["fb5-tar"]["document"]["run_id"], runs["fb5-tar-again"]["document"]["run_id"])
    assert same["axis"] == [] and same["differences"] == []
    # Its ODS is its major's: the build shares the 5.0 population cache (built once, then copied).
    sources = [run["document"]["population"]["source"] for run in runs.values()]
    assert sources == ["built (now cached)", "copy of cached population", "copy of cached population"], sources


def test_builds_of_two_versions_differ_in_the_engine(builds: dict[str, Any], registered: dict[str, Any]) -> None:
    five, three = run_of(builds, registered, "fb5-tar"), run_of(builds, registered, "fb3-tar")
    assert three["document"]["engine"]["label"] == "Firebird 3.0.14 embedded (fb3-tar)"
    assert three["conditions"]["engine.binaries"] == registered["entries"]["fb3-tar"]["binaries"]
    differing = {key for key in five["conditions"] if five["conditions"][key] != three["conditions"].get(key)}
    assert {"engine.version", "engine.build", "engine.binaries"} <= differing
    axis = compared(builds, three["document"]["run_id"], five["document"]["run_id"])["axis"]
    assert {"engine.version", "engine.build", "engine.binaries"} <= {row["key"] for row in axis}


def test_the_pypi_runtime_records_its_binaries_too(builds: dict[str, Any], registered: dict[str, Any]) -> None:
    """The same files in PyPI's flat layout (libfbclient.so.2 at the top) are the same build."""
    pypi, build = run_of(builds, registered, "5.0"), run_of(builds, registered, "fb5-dir")
    binaries = pypi["document"]["engine"]["binaries"]
    assert binaries["source"] == str(builds["runtimes"]["5.0.4"]) and binaries["files"] >= 5
    assert pypi["document"]["engine"]["label"] == "Firebird 5.0.4 embedded"
    assert pypi["conditions"] == build["conditions"]


def test_a_run_links_its_runtime_root_from_the_build(builds: dict[str, Any], registered: dict[str, Any],
                                                     tmp_path: Path) -> None:
    """The engine process runs on the registered build's files: while it runs, the runtime root's
    engine plugin and client library are the unpacked copy's files (the same inodes), not the PyPI
    runtime's."""
    from fbbench.runner.run import execute
    from fbbench.runner.settings import RunSettings

    root = Path(registered["entries"]["fb5-tar"]["directory"])
    work = tmp_path / "work"
    seen: list[tuple[int, int]] = []

    def on_engine(process: subprocess.Popen[bytes]) -> None:
        (plugin,) = work.glob("runtimes/*/root/plugins/libEngine13.so")
        (client,) = work.glob("runtimes/*/root/libfbclient.so.2")
        seen.append((plugin.stat().st_ino, client.stat().st_ino))

    settings = RunSettings(workload="orders", engine="fb5-tar", connections=1, transactions=5,
                           workdir=str(work), results=str(tmp_path / "results.sqlite"), validation=False).validate()
    outcome = execute(settings, on_engine=on_engine)
    assert outcome.status == "completed", outcome.failure
    assert seen == [((root / "plugins" / "libEngine13.so").stat().st_ino,
                     (root / "lib" / "libfbclient.so.2").resolve().stat().st_ino)]
    assert seen[0][0] != (builds["runtimes"]["5.0.4"] / "plugins" / "libEngine13.so").stat().st_ino
    assert not list(work.glob("runtimes/*/root/databases.conf"))  # never the build's own configuration


# ------------------------------------------------------------------------------- bad input


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "", size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, size
    if kind == tarfile.CHRTYPE:
        info.devmajor, info.devminor = 1, 3
    return info


def other_architecture(installation: Path, target: Path, machine: int, bits: int) -> Path:
    """A copy of ``installation`` whose client library and engine plugin say they are for another
    CPU (their ELF headers' class and machine rewritten, as such a build's are)."""
    shutil.copytree(installation, target, symlinks=True)
    for elf in (target / "lib" / "libfbclient.so.2", target / "plugins" / "libEngine13.so"):
        real = elf.resolve()
        data = bytearray(real.read_bytes())
        data[4] = 1 if bits == 32 else 2
        data[18:20] = machine.to_bytes(2, "little")
        real.write_bytes(bytes(data))
    return target


def leftovers(builds: dict[str, Any]) -> list[str]:
    """What unpacking left in the engine cache's builds directory besides the registered copies."""
    place = builds["home"] / "builds"
    used = {entry.get("unpacked") for entry in registry(builds).values()}
    return sorted(str(path) for path in place.glob("*") if str(path) not in used) if place.exists() else []


def test_bad_input_is_one_line_and_leaves_nothing(builds: dict[str, Any], registered: dict[str, Any],
                                                 tmp_path: Path) -> None:
    from fbbench.runner.builds import add

    five, three = builds["5.0.4"], builds["3.0.14"]
    text = tmp_path / "notes.txt"
    text.write_text("not a build\n")
    other_tar = tmp_path / "other.tar.gz"
    with tarfile.open(other_tar, "w:gz") as archive:
        archive.add(text, arcname="notes/notes.txt")
    named_like_a_tarball = tmp_path / "Firebird-5.0.4.1812-0-linux-x64.tar.gz"
    named_like_a_tarball.write_text("<html>404 Not Found</html>\n")
    whole = five["tarball"].read_bytes()
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(whole[: len(whole) // 2])
    corrupt = tmp_path / "corrupt.tar.gz"
    corrupt.write_bytes(whole[: len(whole) // 2] + bytes(4096) + whole[len(whole) // 2 + 4096:])
    top = "Firebird-5.0.4.1812-0-linux-x64"

    def bad(name: str, extra: list[tuple[tarfile.TarInfo, bytes | None]] = (), outer: list[str] = ()) -> Path:
        return official_tarball(None, tmp_path / f"{name}.tar.gz", top, extra, outer)

    empty = tmp_path / "empty"
    empty.mkdir()
    mixed = tmp_path / "mixed" / "firebird"  # a half-upgraded installation: 5.0's engine, 3.0's client
    shutil.copytree(five["installation"], mixed, symlinks=True)
    shutil.copy2(builds["runtimes"]["3.0.14"] / "libfbclient.so.2", mixed / "lib" / "libfbclient.so.5.0.4")
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    cases: list[tuple[str, Path, bool, list[str]]] = [
        ("fb-x", tmp_path / "nowhere.tar.gz", False, ["nowhere.tar.gz does not exist", "official Linux tarball"]),
        ("fb-x", tmp_path / "loop-a", False, ["loop-a is a loop of symbolic links"]),
        ("fb-x", tmp_path / "dangling", False, [f"dangling is a symbolic link to {tmp_path / 'gone'}, which does not"]),
        ("fb-x", tmp_path / "empty" / "x" / "y", False, ["y does not exist"]),
        ("fb-x", other_tar, False, ["is not an official Firebird tarball: it has no buildroot.tar.gz"]),
        ("fb-x", named_like_a_tarball, False, ["is not a tarball (neither a gzip"]),
        ("fb-x", truncated, False, ["truncated.tar.gz is damaged", "download it again"]),
        ("fb-x", corrupt, False, ["corrupt.tar.gz is damaged"]),
        ("fb-x", bad("outer-up", outer=["../escape.sh"]), False, ["would land outside", "../escape.sh"]),
        ("fb-x", bad("outer-absolute", outer=["/tmp/escape.sh"]), False, ["would land outside", "/tmp/escape.sh"]),
        ("fb-x", bad("absolute", [(member("/opt/firebird/bin/evil", size=2), b"x\n")]), False,
         ["would land outside", "/opt/firebird/bin/evil"]),
        ("fb-x", bad("up", [(member("./opt/firebird/../../../evil", size=2), b"x\n")]), False,
         ["would land outside"]),
        ("fb-x", bad("link-up", [(member("./opt/firebird/lib/evil", tarfile.SYMTYPE, "../../../../etc/passwd"), None)]),
         False, ["symbolic link pointing out of opt/firebird", "../../../../etc/passwd"]),
        ("fb-x", bad("link-absolute", [(member("./opt/firebird/lib/evil", tarfile.SYMTYPE, "/etc/passwd"), None)]),
         False, ["symbolic link pointing out of opt/firebird"]),
        ("fb-x", bad("hard-link", [(member("./opt/firebird/lib/evil", tarfile.LNKTYPE, "./etc/passwd"), None)]),
         False, ["hard link pointing out of opt/firebird"]),
        ("fb-x", bad("device", [(member("./opt/firebird/null", tarfile.CHRTYPE), None)]), False,
         ["holds a device file or fifo (opt/firebird/null)"]),
        ("fb-x", bad("huge", [(member("./opt/firebird/huge", size=5 * 2**30), None)]), False,
         ["would unpack to more than 4 GiB"]),
        ("fb-x", bad("no-firebird"), False, ["its buildroot.tar.gz has no opt/firebird/"]),
        ("fb-x", other_architecture(five["installation"], tmp_path / "arm64", 183, 64), False,
         ["is a build for arm64 (aarch64) (lib/libfbclient.so.2)", "this machine runs x86-64"]),
        ("fb-x", other_architecture(five["installation"], tmp_path / "i386", 3, 32), False,
         ["is a build for i386 (32-bit x86)"]),
        ("fb-x", empty, False, ["neither an engine plugin (plugins/libEngine*.so) nor a server (bin/firebird)"]),
        ("fb-x", mixed, False, ["the engine could not create a database"]),
        ("fb-x", five["installation"], True, ["has no server (bin/firebird): fbbench can run it embedded only"]),
        ("fb5-dir", three["installation"], False, ["engine 'fb5-dir' is already registered for "
                                                   f"{five['installation']}"]),
        ("5.0", five["installation"], False, ["'5.0' names an embedded engine version"]),
        ("server", five["installation"], False, ["invalid engine name 'server'"]),
        ("fb/5", five["installation"], False, ["invalid engine name 'fb/5'"]),
    ]
    before, tarball_before = registry(builds), fingerprint(five["tarball"])
    for name, path, server, fragments in cases:
        with pytest.raises(FbbenchError) as refused:
            add(name, path, server, tmp_path / "work")
        message, said = refused.value.message, f"{refused.value.message} → {refused.value.hint}"
        assert "\n" not in message and all(fragment in said for fragment in fragments), (path, said)
        assert registry(builds) == before and leftovers(builds) == [], path
    assert fingerprint(five["tarball"]) == tarball_before
    assert not list((tmp_path / "work").glob("runtimes/*"))  # the verifying attach's runtime went with it
    assert not list(tmp_path.glob("**/evil")) and not list(tmp_path.glob("**/escape.sh"))

    # As the user sees them: one line, no traceback.
    assert_clean_error(run_cli("engines", "add", "fb-x", str(corrupt)), "corrupt.tar.gz is damaged")
    assert_clean_error(run_cli("engines", "add", "fb-x", str(tmp_path / "arm64")), "arm64 (aarch64)")
    assert_clean_error(run_cli("run", "orders", "--transactions", "5", "--engine", "server:fb5-dir",
                               "--workdir", str(tmp_path / "work")),
                       "registered engine 'fb5-dir' has no server", "run it embedded: --engine fb5-dir")
    assert_clean_error(run_cli("run", "orders", "--transactions", "5", "--engine", "embedded:nosuch",
                               "--workdir", str(tmp_path / "work")), "unknown embedded engine 'nosuch'")


def test_a_full_disk_while_unpacking_registers_nothing(builds: dict[str, Any], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from fbbench.runner.builds import add

    monkeypatch.setenv("FBBENCH_HOME", str(tmp_path / "home"))
    place = tmp_path / "home" / "builds"
    place.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(place)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        before = registry(builds)
        with pytest.raises(FbbenchError) as refused:
            add("fb5-full", builds["5.0.4"]["tarball"], False, tmp_path / "work")
        assert refused.value.message.startswith(f"cannot unpack {builds['5.0.4']['tarball']} into {place}: "
                                                "No space left on device"), refused.value.message
        assert refused.value.hint == f"free space on the file system of {place}, or set FBBENCH_CACHE to a " \
            "directory on another one"
        assert list(place.iterdir()) == [] and registry(builds) == before
    finally:
        subprocess.run(["umount", "-l", str(place)], check=False)


def test_remove_forgets_the_name_and_only_the_copy_fbbench_made(builds: dict[str, Any], tmp_path: Path) -> None:
    three = builds["3.0.14"]
    tarball = official_tarball(three["installation"], tmp_path / "Firebird-3.0.14.33856-0.amd64.tar.gz",
                               "Firebird-3.0.14.33856-0.amd64", outer_extra=["Firebird-3.0.14.33856-0.amd64/README"])
    original = fingerprint(tarball)
    for name in ("fb3-one", "fb3-two"):
        assert run_cli("engines", "add", name, str(tarball)).returncode == 0
    installation = shutil.copytree(three["installation"], tmp_path / "firebird", symlinks=True)
    assert run_cli("engines", "add", "fb3-here", str(installation)).returncode == 0
    copy = Path(registry(builds)["fb3-one"]["unpacked"])
    assert copy.is_dir() and registry(builds)["fb3-two"]["unpacked"] == str(copy)

    first = run_cli("engines", "remove", "fb3-one")
    assert first.returncode == 0 and first.stdout.strip() == f"removed fb3-one ({tarball})", first.stdout
    assert copy.is_dir()  # fb3-two still runs from it
    second = run_cli("engines", "remove", "fb3-two")
    assert second.returncode == 0 and "".join(second.stdout.split()) == \
        "".join(f"removed fb3-two ({tarball}) and its unpacked copy {copy}".split())
    assert not copy.exists() and fingerprint(tarball) == original
    here = run_cli("engines", "remove", "fb3-here")
    assert here.returncode == 0 and (installation / "plugins" / "libEngine12.so").is_file()
    assert {"fb3-one", "fb3-two", "fb3-here"}.isdisjoint(registry(builds))
    assert_clean_error(run_cli("engines", "remove", "fb3-one"), "no registered engine named 'fb3-one'")

    # Each home unpacks its own copy: removing the name in one never takes the copy another uses.
    homes = [tmp_path / "home-a", tmp_path / "home-b"]
    for home in homes:
        added = run_cli("engines", "add", "fb3", str(tarball), env={"FBBENCH_HOME": str(home)})
        assert added.returncode == 0, added.stdout + added.stderr
    removed = run_cli("engines", "remove", "fb3", env={"FBBENCH_HOME": str(homes[0])})
    assert removed.returncode == 0 and "its unpacked copy" in removed.stdout, removed.stdout + removed.stderr
    assert list((homes[0] / "builds").glob("*")) == []
    kept = Path(json.loads((homes[1] / "engines.json").read_text())["engines"]["fb3"]["unpacked"])
    assert kept.parent == homes[1] / "builds" and (kept / "firebird").is_dir(), kept


def test_files_that_changed_since_registration_are_refused(builds: dict[str, Any], tmp_path: Path) -> None:
    from fbbench.engines.runtime import prepare_runtime

    installation = shutil.copytree(builds["3.0.14"]["installation"], tmp_path / "firebird", symlinks=True)
    assert run_cli("engines", "add", "fb3-rebuilt", str(installation)).returncode == 0
    try:
        engine = parse_engine("fb3-rebuilt")
        assert isinstance(engine, EmbeddedEngine) and engine.root == str(installation)
        intl = installation / "intl" / "fbintl"
        intl.write_bytes(intl.read_bytes() + b"\0")  # rebuilt in place: other binaries, the same version
        with pytest.raises(FbbenchError) as refused:
            prepare_runtime(engine, tmp_path / "work")
        assert refused.value.message.startswith("the binaries of Firebird 3.0.14 embedded (fb3-rebuilt) in "
                                                f"{installation} changed since it was registered")
        assert refused.value.hint and "fbbench engines add fb3-rebuilt" in refused.value.hint
        # Registered again: verified again (the attach), and it runs from the new binaries.
        assert run_cli("engines", "add", "fb3-rebuilt", str(installation)).returncode == 0
        rebuilt = parse_engine("fb3-rebuilt")
        assert isinstance(rebuilt, EmbeddedEngine) and rebuilt.binaries != engine.binaries
        prepare_runtime(rebuilt, tmp_path / "work").remove(tmp_path / "work")
        engine = rebuilt
        shutil.rmtree(installation / "plugins")
        with pytest.raises(FbbenchError, match=r"files of Firebird 3\.0\.14 embedded \(fb3-rebuilt\) are gone"):
            prepare_runtime(engine, tmp_path / "work")
    finally:
        run_cli("engines", "remove", "fb3-rebuilt")


def test_names_registered_by_an_older_fbbench_stay_managed_servers(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   builds: dict[str, Any]) -> None:
    monkeypatch.setenv("FBBENCH_HOME", str(tmp_path))
    (tmp_path / "engines.json").write_text(json.dumps(
        {"engines": {"old": {"directory": str(builds["5.0.4"]["installation"]), "added_at": 0}}}))
    with pytest.raises(FbbenchError, match=r"registered engine 'old': .* it has no server binary"):
        parse_engine("old")  # a server, as it was registered: this installation has none
    with pytest.raises(FbbenchError, match=r"'old' .* was registered as a server by an older fbbench"):
        parse_engine("embedded:old")
    (tmp_path / "engines.json").write_text(json.dumps({"engines": {"fb3-debian": {
        "directory": "/usr", "source": "/usr", "mode": "server", "kind": "installation", "layout": "debian",
        "version": "3.0.11", "build": "LI-V3.0.11.33637", "embedded": False, "server": True}}}))
    with pytest.raises(FbbenchError, match=r"'fb3-debian' \(/usr\) cannot run embedded: it is Debian's"):
        parse_engine("embedded:fb3-debian")


def test_debian_binaries_are_its_server_plugins_intl_and_client(builds: dict[str, Any], tmp_path: Path) -> None:
    """Debian's package spreads the engine over /usr (here a copy of that layout made of 3.0.14's
    files); its other programs in /usr/bin are no part of the engine."""
    from fbbench.engines.binaries import digest, engine_binaries, official_binaries
    from fbbench.engines.installation import ManagedEngine

    runtime, usr = builds["runtimes"]["3.0.14"], tmp_path / "usr"
    libdir = usr / "lib" / "x86_64-linux-gnu" / "firebird" / "3.0"
    shutil.copytree(runtime / "plugins", libdir / "plugins")
    shutil.copytree(runtime / "intl", libdir / "intl")
    shutil.copy2(runtime / "libfbclient.so.2", libdir.parent.parent / "libfbclient.so.2")
    (usr / "sbin").mkdir()
    shutil.copy2(runtime / "plugins" / "libEngine12.so", usr / "sbin" / "firebird")  # an ELF file in its place
    (usr / "bin").mkdir()
    shutil.copy2(runtime / "libib_util.so", usr / "bin" / "isql-fb")
    found = engine_binaries(ManagedEngine(str(usr), "debian", "3.0.14", "LI-V3.0.14.33856"))
    assert found is not None and found["source"] == str(usr)
    official = digest(runtime, official_binaries(runtime))
    # PyPI's 3.0.14 has the same client, plugins and intl; Debian's adds its server.
    assert found["files"] == official["files"] + 1 and found["sha256"] != official["sha256"]
    (usr / "bin" / "isql-fb").write_bytes(b"\x7fELF another program")
    assert engine_binaries(ManagedEngine(str(usr), "debian", "3.0.14", "LI-V3.0.14.33856")) == found


def test_a_builds_population_cache_is_its_majors_unless_its_ods_differs() -> None:
    from fbbench.engines.runtime import Runtime

    assert EmbeddedEngine("5.0.4").cache_engine == "5.0"
    assert EmbeddedEngine("5.0.3", root="/b", name="b", ods="13.1").cache_engine == "5.0"
    assert EmbeddedEngine("5.0.3", root="/b", name="b", ods="13.2").cache_engine == "5.0 ODS 13.2"
    assert EmbeddedEngine("6.0.0", root="/b", name="b", ods="14.0").cache_engine == "6.0 ODS 14.0"
    engine = EmbeddedEngine("6.0.0", root="/b", name="snapshot", ods="14.0", binaries="ab" * 32)
    # The engine child rebuilds the engine from the runtime's JSON.
    assert Runtime.from_json(Runtime(engine, "6.0.0", Path("/w/root")).to_json()).engine == engine
    assert Runtime.from_json(Runtime(EmbeddedEngine("5.0.4"), "5.0.4", Path("/w")).to_json()).engine == \
        EmbeddedEngine("5.0.4")


def test_binaries_that_differ_are_an_engine_build_difference() -> None:
    """Outside the axis, other binaries of one version are FB005 (engine build differs); a run
    recorded before engine.binaries existed cannot be compared on it (FB009, a note), which is
    no claim that the builds differ."""
    from fbbench.analysis.lint import lint_comparison

    base = {"engine.version": "5.0.4", "engine.build": "LI-V5.0.4.1812 Firebird 5.0", "engine.binaries": "ab" * 32,
            "conf.DefaultDbCachePages": "2048"}
    rebuilt = {**base, "engine.binaries": "cd" * 32, "conf.DefaultDbCachePages": "4096"}
    found = lint_comparison({"A": base, "B": rebuilt}, ["conf.DefaultDbCachePages"])
    assert [(f.rule, f.evidence["key"]) for f in found] == [("FB005", "engine.binaries")]
    older = {key: value for key, value in rebuilt.items() if key != "engine.binaries"}
    found = lint_comparison({"A": base, "B": older}, ["conf.DefaultDbCachePages"])
    assert [(f.rule, f.evidence["key"]) for f in found] == [("FB009", "engine.binaries")]

"""Shared fixtures: every test session gets its own fbbench home (registry, results, work
directory) while sharing the engine cache, so engines download once per machine."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests import forkserver
from tests.fb3server import Fb3Server, fb3_server_unavailable

REPO = Path(__file__).resolve().parent.parent

# A suite started by a script in the background (`cmd &` without job control) inherits SIGINT
# ignored, and so would every process it starts: the tests that press Ctrl-C on fbbench, an engine
# child or a lab worker need it as a terminal has it. (Seen: those tests failed, and each lab
# test's workers took 40 s to be killed, only when the first file a worker ran was one of them.)
signal.signal(signal.SIGINT, signal.default_int_handler)

SLOW = Path(__file__).with_name("slow.txt")


def slow_tests() -> dict[str, float]:
    """tests/slow.txt: each slow test function and the seconds it took (0 where not timed)."""
    listed = {}
    for line in SLOW.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            node, _, seconds = line.partition(" ")
            listed[node] = float(seconds or 0)
    return listed


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the test functions tests/slow.txt lists (written by tests/list_slow.py from a
    whole-suite run) as slow, so that ``pytest -m "not slow"`` is the quick subset; and put the
    files whose slow tests take longest first. The parallel phase hands out whole files in this
    order, so a long file no longer starts late and runs on alone at the end (test_lab.py's
    3.6 minutes began 7.7 minutes in, and three of four workers were idle for its last 34-59 s)."""
    listed = slow_tests()
    weight: dict[str, float] = defaultdict(float)
    for function in {item.nodeid.split("[")[0] for item in items} & listed.keys():
        weight[function.split("::")[0]] += listed[function]
    for item in items:
        if item.nodeid.split("[")[0] in listed:
            item.add_marker(pytest.mark.slow)
    order = {item.nodeid: index for index, item in enumerate(items)}
    items.sort(key=lambda item: (-weight[item.nodeid.split("::")[0]], order[item.nodeid]))


# FBBENCH_TEST_TIMELINE=FILE: each test's worker, start and end (epoch seconds, setup and teardown
# included) appended to FILE, to see which file keeps the parallel phase going at its end.
_TIMELINE = os.environ.get("FBBENCH_TEST_TIMELINE")


def pytest_configure(config: pytest.Config) -> None:
    """FBBENCH_TEST_TIMELINE is checked once, by the process that starts the workers: a file that
    can be appended to, and new, empty or a timeline already (both phases write one) — never a
    file of the user's that the lines would be appended to."""
    if not _TIMELINE or hasattr(config, "workerinput"):
        return
    path = Path(_TIMELINE)
    try:
        with open(path, "a+") as timeline:
            timeline.seek(0)
            first = timeline.readline()
    except OSError as error:
        raise pytest.UsageError(f"FBBENCH_TEST_TIMELINE: cannot append to {path}: {error.strerror}") from None
    fields = first.rstrip("\n").split("\t")
    if first and not (len(fields) == 4 and all(_number(field) for field in fields[1:3])):
        raise pytest.UsageError(f"FBBENCH_TEST_TIMELINE: {path} holds something other than a test timeline; "
                                "name a new file")


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    started = time.time()
    yield
    if _TIMELINE:
        with open(_TIMELINE, "a") as timeline:
            timeline.write(f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}\t{started:.1f}\t{time.time():.1f}"
                           f"\t{item.nodeid}\n")


@pytest.fixture(scope="session", autouse=True)
def fbbench_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("fbbench-home")
    previous = os.environ.get("FBBENCH_HOME")
    os.environ["FBBENCH_HOME"] = str(home)
    yield home
    if previous is None:
        os.environ.pop("FBBENCH_HOME", None)
    else:
        os.environ["FBBENCH_HOME"] = previous


def process_running(pid: int) -> bool:
    """Whether ``pid`` runs: a zombie waiting for its parent to reap it counts as gone, unless it
    is only its first thread, with others still running or exiting (and holding its files)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            state = Path(f"/proc/{pid}/task/{task}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            return True
    return False


# The engine template host this pytest process's commands ask (fbbench.engines.template_host):
# its FBBENCH_ENGINE_TEMPLATES, or nothing where it could not start.
_template_host: dict[str, str] = {}


@contextmanager
def template_host(directory: Path, log: Path | None = None) -> Iterator[tuple[subprocess.Popen[bytes], str | None]]:
    """A template host listening at ``directory``/host.sock (its stderr to ``log``): the process
    and that address, or None where it did not say it listens. Ended at the end as a harness's end
    ends it: its standard input closed."""
    address = directory / "host.sock"
    with open(log or os.devnull, "wb") as errors:
        host = subprocess.Popen([sys.executable, "-m", "fbbench.engines.template_host", str(address)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, cwd=REPO)
    assert host.stdin is not None and host.stdout is not None
    try:
        yield host, str(address) if host.stdout.readline() == b"listening\n" else None
    finally:
        host.stdin.close()
        try:
            host.wait(30)
        except subprocess.TimeoutExpired:
            host.kill()
            host.wait()


@pytest.fixture(scope="session", autouse=True)
def engine_template_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Engine templates kept across the commands of this pytest process: each engine child of a
    command that :func:`run_cli` starts, and each one a test starts itself (``run_in_engine``),
    is forked from one instead of starting an interpreter (0.35–0.5 s of CPU each). Tests that
    start fbbench themselves (``subprocess.Popen``: Ctrl-C, kills, the start-up window) do not use
    it: their single runs start a new interpreter, as a user's do. ``FBBENCH_TEST_TEMPLATES=0``
    turns it off."""
    from fbbench.engines.template import HOST_VARIABLE, use_host

    if os.environ.get("FBBENCH_TEST_TEMPLATES") == "0":
        yield
        return
    directory = tmp_path_factory.mktemp("templates")
    with template_host(directory, directory / "host.log") as (_, address):
        if address is not None:
            _template_host[HOST_VARIABLE] = address
            use_host(address)  # the engine children tests start themselves (run_in_engine)
        try:
            yield
        finally:
            use_host(None)
            _template_host.clear()


@contextmanager
def built_once(name: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, bool]]:
    """A fixture's directory that both phases of tests/run.sh share, so that a module whose tests
    run in both (test_application.py's traced application: 17 s) builds it once: ``(directory,
    built)`` — built is True where it is complete already, and the block must then only read it;
    otherwise the block builds it and it is marked complete when the block ends without an error.
    Under FBBENCH_TEST_SHARED (set by tests/run.sh, removed at its end), the directory is NAME there,
    built under a lock (one pytest-xdist worker builds, another waiting reuses it); without it, a
    temporary directory of this session, as before."""
    import fcntl

    shared = os.environ.get("FBBENCH_TEST_SHARED")
    if not shared:
        yield tmp_path_factory.mktemp(name), False
        return
    directory, complete = Path(shared) / name, Path(shared) / f"{name}.complete"
    with open(Path(shared) / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if complete.exists():
            yield directory, True
            return
        if directory.exists():  # a build that failed before: started again from nothing
            import shutil

            shutil.rmtree(directory)
        directory.mkdir()
        yield directory, False
        complete.touch()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An fbbench work directory, made by fbbench (marked), as the CLI takes it with --workdir."""
    from fbbench.paths import own_workdir

    return own_workdir(tmp_path / "work").path


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``fbbench`` as a user would, in a separate process (forked from one that has imported
    the CLI already where it can: :mod:`tests.forkserver`)."""
    environment = {**os.environ, "COLUMNS": "200", **_template_host, **(env or {})}
    served = forkserver.run(list(args), environment, cwd, timeout)
    if served is not None:
        return served
    return subprocess.run([sys.executable, "-m", "fbbench", *args], capture_output=True, text=True,
                          env=environment, timeout=timeout, cwd=cwd)


def assert_clean_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    """A user error: non-zero exit, an 'error:' line naming the problem, no traceback."""
    assert result.returncode != 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    assert "error:" in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment.lower() in result.stderr.lower(), result.stderr


ENGINES = ["3.0", "4.0", "5.0"]


@contextmanager
def fb3_server_or_skip(workdir: Path, config: dict[str, str] | None = None) -> Iterator[Fb3Server]:
    """A private loopback Firebird 3 server under ``workdir`` (``config``: firebird.conf keys of
    its own); the test is skipped, saying how to fix it, where none can run."""
    reason = fb3_server_unavailable()
    if reason:
        pytest.skip(reason)
    with Fb3Server.start(workdir, config=config) as server:
        yield server


BANK = Path(__file__).parent / "workloads" / "bank"

# A check that passes only once `p_together` checks have begun while none has ended: each records
# its arrival (committed at once, in an autonomous transaction), then waits up to p_seconds for the
# others' (a fresh snapshot in each autonomous transaction) and reports one violation if they do
# not come. Checks run one after another never pass it.
_WAITING_CHECK_PROCEDURE = """
create table check_arrivals (arrived timestamp);
set term ^ ;
create procedure checks_together (p_together integer, p_seconds integer) returns (violations integer)
as
declare arrived integer = 0;
declare started timestamp;
begin
  started = cast('now' as timestamp);
  in autonomous transaction do
    insert into check_arrivals values (:started);
  while (arrived < p_together and datediff(second from started to cast('now' as timestamp)) < p_seconds) do
    in autonomous transaction do
      select count(*) from check_arrivals into :arrived;
  violations = iif(arrived >= p_together, 0, 1);
  suspend;
end^
set term ; ^
"""


def bank_with_waiting_checks(tmp_path: Path, checks: int, together: int, seconds: int) -> Path:
    """A copy of the bank workload whose checks begin with ``checks`` checks that each wait (up to
    ``seconds``) until ``together`` of them have begun."""
    import shutil

    workload = tmp_path / "bank-waiting"
    shutil.copytree(BANK, workload)
    (workload / "schema.sql").write_text((workload / "schema.sql").read_text() + _WAITING_CHECK_PROCEDURE)
    toml = workload / "workload.toml"
    waiting = "".join(f'[[checks]]\nname = "together {n + 1}"\n'
                      f'sql = "select violations from checks_together({together}, {seconds})"\n\n'
                      for n in range(checks))
    text = toml.read_text()
    first = text.index("[[checks]]")
    toml.write_text(text[:first] + waiting + text[first:])
    return workload

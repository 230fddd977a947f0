"""Ctrl-C at chosen and random moments of ``fbbench trace record``: how many stops were clean?

The stress for the trace record hang (a recorder of the loopback Debian 3.0 server that did not
end within 120 s of SIGINT in a whole-suite run): one private Debian Firebird 3.0 server on
loopback serves every try; each try starts ``fbbench trace record`` (as a user does, in a process
of its own) against a database on it and, at one of these moments in turn, stops it:

- ``start``: SIGINT after a random 0–2.5 s, mostly before the trace session has started;
- ``idle``: SIGINT a random 0–2 s after the session started, nothing else on the server;
- ``load``: SIGINT while a load (committed inserts of a 1,500-character value on 6 attachments,
  a few MB of trace a second) runs against the database;
- ``after``: SIGINT a random 0–0.5 s after such a load ended — the moment of the hang that was
  seen; every insert the load committed must then be in the trace;
- ``twice``: as ``after``, and a second SIGINT 0.05–0.5 s after the first (it must stop at once);
- ``frozen``: SIGINT while the server is stopped (SIGSTOP: a server that no longer answers, as
  one behind a dead network);
- ``gone``: no signal: the server is killed (SIGKILL) while recording; the recorder must end by
  itself ("stopped: the server went away").

A stop is clean when the command exits within QUICK seconds (the project's rule: a Ctrl-C ends
every command within seconds) with 0 (it keeps and summarises what it recorded), 130
(interrupted before anything was recorded) or -SIGINT (a second Ctrl-C that came as the
interpreter exited), says why it stopped, prints no traceback, and lost
nothing it should have kept: CUT counts the stops whose session connection the Ctrl-C cut
("the session ended: …" after a Ctrl-C: what the engine still held is lost) or whose trace misses
committed inserts. A stop that takes longer than HANG seconds is a hang: the stacks of the
recorder and its engine child are printed (py-spy), and both are killed. ``--stress N`` runs
``stress-ng --cpu N`` beside the tries.

    .venv/bin/python benchmarks/trace_interrupt.py --tries 70 --stress 2

Prints one line per try that was not clean, then the count.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

QUICK = 10.0
HANG = 40.0
MOMENTS = ("start", "idle", "load", "after", "twice", "frozen", "gone")
CONNECTIONS = 6
NOTE = "x" * 1500  # a long parameter: every execution puts some KiB into the trace


# ---------------------------------------------------------------- inside an engine child (the load)


def create(dsn: str) -> None:
    from fbbench.database import driver

    with driver.create_database(dsn) as connection:
        connection.execute_immediate("create table t (id integer, note varchar(2000))")
        connection.commit()


def load(dsn: str, seconds: float) -> int:
    """Small committed transactions on CONNECTIONS attachments for ``seconds``; how many."""
    from fbbench.database import driver

    done = [0] * CONNECTIONS

    def work(index: int) -> None:
        with driver.connect(dsn) as connection:
            cursor = connection.cursor()
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                cursor.execute("insert into t values (?, ?)", (index, f"{done[index]} {NOTE}"))
                cursor.execute("select count(*) from t where id = ?", (index,))
                cursor.fetchall()
                connection.commit()
                done[index] += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(CONNECTIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done)


# ------------------------------------------------------------------------------------ the stress


class Lab:
    """The server, a database on it, and what a try needs to start a recorder or a load."""

    def __init__(self, directory: Path) -> None:
        from fbbench.engines.installation import inspect_installation
        from fbbench.engines.managed.server import ManagedServer

        self.directory = directory
        engine = inspect_installation("/usr")
        self.server = ManagedServer.start(engine, directory / "server",
                                          conf={"AuthServer": "Srp", "UserManager": "Srp", "WireCrypt": "Enabled"})
        data = directory / "data"
        data.mkdir()
        data.chmod(0o777)  # the server process writes the database file
        self.dsn = self.server.dsn(data / "traced.fdb")
        self.password = directory / "password"
        self.password.write_text(self.server.password + "\n")
        self.child("create", self.dsn)

    def child(self, function: str, *args: object) -> object:
        from fbbench.engines import parse_engine, prepare_runtime, run_in_engine

        work = Path(tempfile.mkdtemp(prefix="load-", dir=self.directory))
        runtime = prepare_runtime(parse_engine(self.dsn), work, user=self.server.user,
                                  password=self.server.password)
        try:
            return run_in_engine(runtime, f"trace_interrupt:{function}", *args)
        finally:
            runtime.remove(work)
            shutil.rmtree(work, ignore_errors=True)

    def recorder(self, output: Path) -> subprocess.Popen[str]:
        fbbench = Path(sys.executable).with_name("fbbench")
        command = [str(fbbench)] if fbbench.exists() else [sys.executable, "-m", "fbbench"]
        return subprocess.Popen([*command, "trace", "record", "--engine", self.dsn, "-o", str(output),
                                 "--duration", "10m", "--user", self.server.user, "--password-file",
                                 str(self.password), "--workdir", str(self.directory / "work")],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=os.environ | {"COLUMNS": "200", "PYTHONPATH": str(REPO)})

    def freeze(self, frozen: bool) -> None:
        for pid in self.server.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP if frozen else signal.SIGCONT)

    def close(self) -> None:
        self.freeze(False)
        self.server.stop()


def children_of(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in found]


def stacks(pids: list[int]) -> str:
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        return "(install py-spy for the stacks)"
    return "\n".join(subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True, text=True).stdout
                     for pid in pids)


def session_started(recorder: subprocess.Popen[str], port: int) -> bool:
    """Whether the recorder's engine child is connected to the server (its trace session starts
    at once after that; its file is buffered, so what the file holds tells late)."""
    children = children_of(recorder.pid)
    if not children:
        return False
    sockets = subprocess.run(["ss", "-tnpH", "state", "established", "dport", f"= :{port}"], capture_output=True,
                             text=True).stdout
    return any(f"pid={child}," in sockets for child in children)


CLEAN, EARLY, SLOW, HUNG, WRONG, CUT = "clean", "ended before the signal", "SLOW", "HUNG", "WRONG", "CUT"


def traced_inserts(output: Path) -> int:
    from fbbench.trace.parser import parse_file

    return sum(1 for e in parse_file(output).executions if e.sql.startswith("insert into t "))


def one_try(lab: Lab, index: int, moment: str, rng: random.Random) -> tuple[str, str]:
    output = lab.directory / f"try{index}.trace"
    recorder = lab.recorder(output)
    loader: threading.Thread | None = None
    loaded: list[object] = []
    try:
        if moment == "start":
            time.sleep(rng.uniform(0, 2.5))
        else:
            deadline = time.monotonic() + 60
            while not session_started(recorder, lab.server.port) and recorder.poll() is None \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            if moment == "idle":
                time.sleep(rng.uniform(0, 2))
            elif moment in ("frozen", "gone"):
                time.sleep(rng.uniform(0.5, 1.5))
            else:
                seconds = rng.uniform(1, 3)
                loader = threading.Thread(target=lambda: loaded.append(lab.child("load", lab.dsn, seconds)),
                                          daemon=True)
                loader.start()
                if moment == "load":
                    time.sleep(rng.uniform(0.5, seconds))
                else:
                    loader.join()
                    time.sleep(rng.uniform(0, 0.5))
        if recorder.poll() is not None:
            out, err = recorder.communicate()
            return EARLY, f"exit {recorder.returncode}: {out[-500:]}{err[-500:]}"
        started = session_started(recorder, lab.server.port)
        if moment == "gone":
            lab.server.kill()
        else:
            if moment == "frozen":
                lab.freeze(True)
            recorder.send_signal(signal.SIGINT)
        sent = time.monotonic()
        if moment == "twice":
            time.sleep(rng.uniform(0.05, 0.5))
            if recorder.poll() is None:
                recorder.send_signal(signal.SIGINT)
        try:
            out, err = recorder.communicate(timeout=HANG)
        except subprocess.TimeoutExpired:
            pids = [recorder.pid, *children_of(recorder.pid)]
            dump = stacks(pids)
            for pid in reversed(pids):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            out, err = recorder.communicate()
            return HUNG, (f"{moment} (session {'started' if started else 'not started'}): no exit {HANG:g} s after "
                          f"the {'kill' if moment == 'gone' else 'SIGINT'}\n{dump}\n--- stdout\n{out[-1500:]}"
                          f"\n--- stderr\n{err[-1500:]}")
        took = time.monotonic() - sent
        detail = f"{moment} (session {'started' if started else 'not started'}): exit {recorder.returncode} " \
                 f"in {took:.1f} s"
        said = "stopped: the server went away" if moment == "gone" else "stopped: interrupted (Ctrl-C)"
        # -SIGINT: a second Ctrl-C that came while the interpreter was already exiting (it restores
        # the default action): the work had ended.
        if recorder.returncode not in (0, 130, -signal.SIGINT) or "Traceback" in out + err or \
                (recorder.returncode == 0 and said not in out):
            return WRONG, detail + f"\n--- stdout\n{out[-1500:]}\n--- stderr\n{err[-1500:]}"
        if took > QUICK:
            return SLOW, detail + f"\n--- stdout\n{out[-800:]}"
        if moment != "gone" and "the session ended:" in out:
            return CUT, detail + f"\n--- stdout\n{out[-800:]}"
        if moment == "after" and loaded and recorder.returncode == 0:
            missing = int(loaded[0]) - traced_inserts(output)  # type: ignore[call-overload]
            if missing > 0:
                return CUT, detail + f": {missing} of the {loaded[0]} committed inserts are not in the trace"
        return CLEAN, detail
    finally:
        if recorder.poll() is None:
            recorder.kill()
            recorder.communicate()
        if loader is not None:
            loader.join(60)
        if moment == "frozen":
            lab.freeze(False)
        if moment == "gone":
            lab.server.restart()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=40)
    parser.add_argument("--stress", type=int, default=0, help="stress-ng --cpu N beside the tries (0: none)")
    parser.add_argument("--moments", default=",".join(MOMENTS), help=f"which moments, in turn (of {MOMENTS})")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--verbose", action="store_true", help="a line for every try")
    args = parser.parse_args()
    # A shell starts a background job with SIGINT ignored, and an ignored signal stays ignored in
    # every child: fbbench would never see the Ctrl-C this script sends. Ours is the default again.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    moments = [m for m in args.moments.split(",") if m]
    rng = random.Random(args.seed)
    stress = None
    if args.stress:
        if not shutil.which("stress-ng"):
            print("stress-ng is not installed (apt-get install stress-ng)", file=sys.stderr)
            return 2
        stress = subprocess.Popen(["stress-ng", "--cpu", str(args.stress), "--quiet"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
    counts = dict.fromkeys((CLEAN, EARLY, SLOW, HUNG, WRONG, CUT), 0)
    per_moment = {m: dict.fromkeys(counts, 0) for m in moments}
    with tempfile.TemporaryDirectory(prefix="fbbench-trace-interrupt-") as tmp:
        lab = Lab(Path(tmp))
        try:
            for index in range(1, args.tries + 1):
                moment = moments[(index - 1) % len(moments)]
                began = time.monotonic()
                kind, detail = one_try(lab, index, moment, rng)
                counts[kind] += 1
                per_moment[moment][kind] += 1
                if kind != CLEAN:
                    print(f"try {index}: {kind}: {detail}", flush=True)
                elif args.verbose or index % 10 == 0:
                    print(f"try {index}: {counts[CLEAN]} clean so far (last: {detail}; the try took "
                          f"{time.monotonic() - began:.1f} s)", flush=True)
        finally:
            lab.close()
            if stress is not None:
                stress.terminate()
                stress.wait()
    stopped = args.tries - counts[EARLY]
    by_moment = "; ".join(f"{m}: {c[SLOW] + c[HUNG] + c[WRONG] + c[CUT]} of {sum(c.values()) - c[EARLY]}"
                          for m, c in per_moment.items())
    print(f"trace record Ctrl-C stress: {counts[CLEAN]} of {stopped} stops clean (exit within {QUICK:g} s), "
          f"{counts[SLOW]} slow, {counts[HUNG]} hung (no exit in {HANG:g} s), {counts[WRONG]} wrong, {counts[CUT]} cut "
          f"(the Ctrl-C cut the session's connection: what it had not read is lost) "
          f"({counts[EARLY]} tries ended before their signal); not clean by moment: {by_moment} — "
          f"stress-ng --cpu {args.stress}")
    return 0 if counts[CLEAN] == stopped else 1


if __name__ == "__main__":
    sys.exit(main())

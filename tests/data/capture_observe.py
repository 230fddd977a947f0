"""Capture the real engine output under tests/data/gstat and tests/data/firebird_log again.

    .venv/bin/python tests/data/capture_observe.py

Runs the engines embedded (3.0, 4.0, 5.0) and Debian's Firebird 3.0 server on loopback, through
the functions the tests use (tests/observe_child.py). Paths inside the files are those of the
temporary directory the capture ran in.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from fbbench.engines import prepare_runtime, run_in_engine  # noqa: E402
from tests.fb3server import Fb3Server  # noqa: E402

DATA = Path(__file__).resolve().parent
CHILD = "tests.observe_child"


def main() -> None:
    gstat_dir, log_dir = DATA / "gstat", DATA / "firebird_log"
    with tempfile.TemporaryDirectory(prefix="fbbench-capture-") as tmp:
        work = Path(tmp)
        spaced = work / "with space"
        spaced.mkdir()
        for version in ("3.0", "4.0", "5.0"):
            tag = f"fb{version[0]}"
            runtime = prepare_runtime(version, work / "runtimes", name=tag)
            texts = run_in_engine(runtime, f"{CHILD}:gstat_before_after", str(work / f"{tag}.fdb"))
            (gstat_dir / f"{tag}-before.txt").write_text(texts["before"])
            (gstat_dir / f"{tag}-after.txt").write_text(texts["after"])
            blobs = run_in_engine(runtime, f"{CHILD}:gstat_blobs", str(spaced / f"{tag} blobs.fdb"))
            (gstat_dir / f"{tag}-blobs-spaced-path.txt").write_text(blobs)
            if version != "3.0":
                replica = run_in_engine(runtime, f"{CHILD}:gstat_replica", str(work / f"{tag}-replica.fdb"))
                (gstat_dir / f"{tag}-replica.txt").write_text(replica)
            watched = run_in_engine(runtime, f"{CHILD}:log_watch_embedded", str(work / f"{tag}-log.fdb"))
            (log_dir / f"{tag}-embedded.log").write_text(watched["log"])
        with Fb3Server.start(work / "server") as server:
            services_host = f"{server.host}/{server.port}"
            database = work / "server.fdb"
            runtime = prepare_runtime(server.dsn(database), work / "runtimes", name="client",
                                      user=server.user, password=server.password)
            watched = run_in_engine(runtime, f"{CHILD}:log_watch_server", services_host, server.dsn(database),
                                    str(database), server.port)
            (log_dir / "fb3-server.log").write_text(watched["log"])


if __name__ == "__main__":
    main()

"""``fbbench db …``: create, describe and drop benchmark databases (only fbbench's own are changed)."""

from __future__ import annotations

import json
import secrets
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from fbbench import paths
from fbbench.cli.common import (
    EngineOption,
    OnOff,
    PasswordFileOption,
    UserOption,
    WorkdirOption,
    _credentials,
    _on_off,
    _workdir,
    console,
    errors,
)
from fbbench.errors import FbbenchError
from fbbench.sizes import size_text

if TYPE_CHECKING:
    from fbbench.database.manage import Credentials

db_app = typer.Typer(help="Benchmark databases: create, restore, describe, drop (only fbbench's own); read and "
                          "backup speed of any.", no_args_is_help=True)


@db_app.command("create")
def db_create(
    path: Annotated[str, typer.Argument(help="Database file, or a server DSN host/port:/path.fdb.")],
    engine: EngineOption = None,
    page_size: Annotated[int | None, typer.Option(help="4096, 8192, 16384 or 32768 (4.0+).")] = None,
    forced_writes: Annotated[OnOff | None, typer.Option(help="Synchronous writes on or off.")] = None,
    page_buffers: Annotated[int | None, typer.Option(help="Page cache size stored in the database.")] = None,
    sweep_interval: Annotated[int | None, typer.Option(help="Automatic sweep interval (0 = off).")] = None,
    user: UserOption = None,
    password_file: PasswordFileOption = None,
    workdir: WorkdirOption = None,
) -> None:
    """Create a database that fbbench owns (marked, so fbbench may later fill or drop it).

    Examples: `fbbench db create /tmp/x.fdb --engine 4.0 --page-size 16384` ·
    `ISC_PASSWORD=... fbbench db create localhost/3050:/data/b.fdb --forced-writes off`
    """
    from fbbench.database import manage

    details = manage.create(path, engine, _workdir(workdir), _credentials(user, password_file),
                            page_size=page_size, forced_writes=_on_off(forced_writes),
                            page_buffers=page_buffers, sweep_interval=sweep_interval)
    console.print(f"created {details['location']} ({details['engine']}, Firebird {details['engine_version']}, "
                  f"page size {details['page_size']})")


@db_app.command("info")
def db_info(
    path: Annotated[str, typer.Argument(help="Database file, or a server DSN.")],
    engine: EngineOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    user: UserOption = None,
    password_file: PasswordFileOption = None,
    workdir: WorkdirOption = None,
) -> None:
    """Describe a database: engine, ODS, page size, buffers, forced writes, sweep, state, size,
    creation time, GUID, OIT/OAT/OST/Next, and whether fbbench owns it. Read from the header page
    without attaching (a server's through its services API); only fbbench's own databases are
    attached, for what only an attachment shows.

    Example: `fbbench db info /tmp/x.fdb`
    """
    from fbbench.database import manage

    details = manage.info(path, engine, _workdir(workdir), _credentials(user, password_file))
    if as_json:
        console.print_json(json.dumps(details, default=str))
        return
    table = Table(show_header=False, title=details["location"])
    unknown = "unknown (not attached: fbbench does not own it)"
    engine_text = f"Firebird {details['engine_version']}"
    if details["server_version"]:
        engine_text += f" ({details['server_version']})"
    size = (f"{details['size_bytes']:,} bytes ({details['pages']:,} pages)" if details["pages"] is not None
            else unknown)
    buffers = details["page_buffers"]
    states = [name for name, on in (("read only", details["read_only"]), ("no reserve", not details["reserve_space"]),
                                    ("encrypted", details["encrypted"])) if on]
    states += [f"shutdown {details['shutdown_mode']}"] if details["shutdown_mode"] != "online" else []
    states += [f"backup {details['backup_state']}"] if details["backup_state"] != "normal" else []
    states += [f"{details['replica_mode']} replica"] if details["replica_mode"] != "none" else []
    rows = [
        ("engine", f"{engine_text}, {details['engine']}"),
        ("architecture", details["architecture"] or unknown),
        ("ODS", details["ods"]), ("page size", details["page_size"]),
        ("page buffers", f"{buffers} (engine default)" if buffers == 0 else buffers),
        ("forced writes", "on" if details["forced_writes"] else "off"),
        ("sweep interval", details["sweep_interval"]),
        ("dialect", details["dialect"]),
        ("state", ", ".join(states) or "online, read-write"),
        ("size", size),
        ("created", details["created_at"]),
        ("GUID", details["guid"] or "none (Firebird 3 databases have none)"),
        ("OIT / OAT / OST / Next", f"{details['oldest_transaction']} / {details['oldest_active']} / "
                                   f"{details['oldest_snapshot']} / {details['next_transaction']}"),
        ("next attachment", details["next_attachment"]),
        ("owned by fbbench", "yes" if details["owned_by_fbbench"] else "no"),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    console.print(table)


@db_app.command("drop")
def db_drop(
    path: Annotated[str, typer.Argument(help="Database file, or a server DSN.")],
    engine: EngineOption = None,
    user: UserOption = None,
    password_file: PasswordFileOption = None,
    workdir: WorkdirOption = None,
) -> None:
    """Drop a database fbbench created. Any other database is refused, untouched.

    Example: `fbbench db drop /tmp/x.fdb`
    """
    from fbbench.database import manage

    manage.drop(path, engine, _workdir(workdir), _credentials(user, password_file))
    console.print(f"dropped {path}")


@db_app.command("restore")
def db_restore(
    backup: Annotated[str, typer.Argument(help="A gbak backup file (.fbk); only read.")],
    engine: EngineOption = None,
    page_size: Annotated[int | None, typer.Option(help="Page size of the restored database (default: the "
                                                  "backup's).")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Restore again even if this backup is already "
                                        "restored for this engine and page size.")] = False,
    workdir: WorkdirOption = None,
) -> None:
    """Restore a gbak backup into fbbench's work directory, as a database fbbench owns (marked like
    every database it creates): one per backup checksum, engine version and page size, which
    `fbbench run WORKLOAD --database-from BACKUP` then copies for each run. Your file is only read.
    Restoring a 3.0 backup on 5.0 gives the on-disk structure your upgrade would.

    Example: `fbbench db restore app.fbk --engine 5.0`
    """
    from fbbench.runner.backup import restore_into_cache

    done = restore_into_cache(backup, engine or "5.0", _workdir(workdir), page_size, fresh)
    facts = done["backup"]
    made = done["source"].startswith("restored")
    how = (f"restored in {done['restore_seconds']:.1f} s" if made
           else "already restored (cached); --fresh restores it again")
    console.print(f"{facts['name']} (sha256 {facts['sha256'][:16]}…, {size_text(facts['size_bytes'])}) on "
                  f"{done['engine']}: {how}", highlight=False, soft_wrap=True)
    console.print(f"  {done['cache_file']}: page size {done['page_size']}, ODS {done['ods']}, "
                  f"{size_text(done['size_bytes'], unit='MB')}, owned by fbbench", highlight=False, soft_wrap=True)
    console.print(f"  runs start from a copy of it: fbbench run WORKLOAD --database-from {backup} --engine "
                  f"{engine or '5.0'}" + (f" --page-size {page_size}" if page_size else ""),
                  highlight=False, soft_wrap=True)
@db_app.command("readspeed")
def db_readspeed(
    path: Annotated[str, typer.Argument(help="Database file (any, fbbench's or not), or a server DSN.")],
    engine: EngineOption = None,
    drop_caches: Annotated[bool, typer.Option("--drop-caches", help="Drop the OS page cache first: a cold read "
                                              "(root only).")] = False,
    direct: Annotated[bool, typer.Option("--direct", help="Read around the OS page cache (O_DIRECT), as the engine "
                                         "does with the file cache off.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    user: UserOption = None,
    password_file: PasswordFileOption = None,
    workdir: WorkdirOption = None,
) -> None:
    """The quick estimate of read speed: a full sequential read of the database file, page by page,
    MB/s = size / time. The file is only read, so any database stays byte for byte as it was (a
    server's database, whose file is out of reach, is read through gstat on the services API,
    which attaches: only fbbench's own).

    Examples: `fbbench db readspeed /data/their.fdb` · `sudo fbbench db readspeed /data/their.fdb --drop-caches`
    """
    from fbbench.database import speed

    result = speed.read_speed(path, engine, _workdir(workdir), _credentials(user, password_file), drop_caches,
                              direct)
    if as_json:
        console.print_json(json.dumps(result, default=str))
        return
    size = size_text(result["size_bytes"], unit="MB") if result["size_bytes"] else "?"
    rate = f"{result['mb_per_second']:,.1f} MB/s" if result["mb_per_second"] is not None else "no rate"
    console.print(f"readspeed {result['location']} ({result['engine']}): {size} in {result['seconds']:.2f} s — "
                  f"{rate} (size / time; {result['method']})", highlight=False, soft_wrap=True)
    console.print(f"OS page cache: {_cache_text({**result['os_cache'], 'direct': result['direct']})}",
                  highlight=False, soft_wrap=True)


@db_app.command("backupspeed")
def db_backupspeed(
    path: Annotated[str, typer.Argument(help="Database file on this machine.")],
    engine: EngineOption = None,
    copy: Annotated[bool, typer.Option("--copy", help="Back up a copy in the work directory (needed for a "
                                       "database fbbench did not create; the copy is removed).")] = False,
    drop_caches: Annotated[bool, typer.Option("--drop-caches", help="Drop the OS page cache first (root only).")]
    = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    user: UserOption = None,
    password_file: PasswordFileOption = None,
    workdir: WorkdirOption = None,
) -> None:
    """IBSurgeon's quick estimate: gbak -b -g of the database to /dev/null through the services
    API, MB/s = size / time. A backup starts a transaction (the header changes): a database
    fbbench did not create is only backed up as a copy (--copy).

    Example: `fbbench db backupspeed /tmp/x.fdb` · `fbbench db backupspeed /data/their.fdb --copy`
    """
    result = _backup_speed(path, engine, paths.own_workdir(workdir), _credentials(user, password_file), drop_caches,
                           copy)
    if as_json:
        console.print_json(json.dumps(result, default=str))
        return
    copied = f" (a copy, made in {result['copy_seconds']:.1f} s)" if result["copied"] else ""
    console.print(f"backupspeed {result['location']}{copied} ({result['engine']}): "
                  f"{size_text(result['size_bytes'], unit='MB')} in {result['seconds']:.2f} s — "
                  f"{result['mb_per_second']:,.1f} MB/s (gbak -b -g to /dev/null)",
                  highlight=False, soft_wrap=True)
    console.print(f"OS page cache: {_cache_text(result['os_cache'])}", highlight=False, soft_wrap=True)


def _backup_speed(location: str, engine: str | None, workdir: paths.WorkDir, credentials: Credentials,
                  drop_caches: bool, copy: bool) -> dict[str, Any]:
    """backupspeed's files in the work directory — its runtime root and, for a database fbbench did
    not create, the copy it backs up — recorded before they exist (a killed backupspeed's are
    removed by the next), the copy refused up front when its file system has no room."""
    from fbbench.database import speed
    from fbbench.engines.runtime import runtime_base
    from fbbench.runner import cleanup, limits

    removed = cleanup.remove_command_leftovers(workdir)
    if removed:
        errors.print(f"removed what killed runs or commands left behind: {', '.join(removed)}", highlight=False,
                     soft_wrap=True)
    source = speed.backup_source(location, engine, copy)
    token = secrets.token_hex(4)
    name = f"backupspeed-{token}"
    made = {runtime_base(workdir.path, name): cleanup.RUNTIME}
    copied = None if source.owned else workdir.path / "backupspeed" / f"{token}.fdb"
    if copied is not None:
        short = limits.shortfall([(copied.parent, source.size)])
        if short is not None:
            raise FbbenchError(f"no room for the copy of {source.path} ({size_text(source.size)}) in the work "
                               f"directory: {short[0].text()}",
                               hint="free some space, or give --workdir on a larger disk")
        made[copied] = cleanup.COPY
    with cleanup.command_files(workdir, made):
        copy_seconds = speed.copy_database(source.path, copied) if copied is not None else None
        result = speed.backup_speed(source, copied or source.path, workdir.path, credentials, drop_caches, name)
    return result if copy_seconds is None else {**result, "copy_seconds": copy_seconds}


def _cache_text(cache: dict[str, Any]) -> str:
    if cache.get("direct"):
        return "read around it (O_DIRECT)"
    if cache.get("dropped"):
        return (f"dropped first ({size_text(cache['page_cache_before'], unit='MiB', digits=0)} → "
                f"{size_text(cache['page_cache_after'], unit='MiB', digits=0)}): a cold read")
    held = cache.get("page_cache")
    if held is None:
        return "not dropped"
    return (f"not dropped ({size_text(held, unit='MiB', digits=0)} held): the read may come from memory; "
            "--drop-caches for a cold one")

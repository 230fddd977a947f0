"""The isql-style script runner: splitting rules and real execution."""

from __future__ import annotations

from pathlib import Path

import pytest

from fbbench.engines import prepare_runtime, run_in_engine
from fbbench.errors import FbbenchError, FirebirdError
from fbbench.workloads.sqltext import split, substitute

SCRIPT = """\
/* An isql script as people write them. */
set sql dialect 3;
set names utf8;
create table account (id integer not null primary key, balance numeric(12, 2) default 0, note varchar(40));
create table audit_log (id integer, old_balance numeric(12, 2), new_balance numeric(12, 2));
commit;

-- a comment with a ; semicolon
insert into account (id, note) values (1, 'it''s; not the end');
insert into account (id, note) values (2, 'two');
commit;

set term ^ ;
create procedure deposit (p_id integer, p_amount numeric(12, 2))
returns (new_balance numeric(12, 2))
as
begin
  update account set balance = balance + :p_amount where id = :p_id
  returning balance into :new_balance;  -- ; inside a PSQL body
  suspend;
end^

create trigger account_audit for account after update
as
begin
  insert into audit_log values (old.id, old.balance, new.balance);
end^
set term ; ^

execute procedure deposit(1, ${amount});
select new_balance from deposit(2, 5);
"""


def test_split_rules() -> None:
    statements = split(SCRIPT, "bank.sql")
    texts = [s.text for s in statements]
    assert texts[0] == "set sql dialect 3"
    assert any("'it''s; not the end'" in t for t in texts)
    procedure = next(s for s in statements if s.text.startswith("create procedure"))
    assert procedure.line == 14
    assert procedure.text.rstrip().endswith("end")
    assert "returning balance into :new_balance;" in procedure.text
    trigger = next(s for s in statements if s.text.startswith("create trigger"))
    assert trigger.line == 23
    assert statements[-1].text == "select new_balance from deposit(2, 5)"
    assert not any(t.lower().startswith("set term") for t in texts)


def test_split_errors_name_file_and_line() -> None:
    with pytest.raises(FbbenchError, match=r"x\.sql:3: statement is not terminated"):
        split("select 1 from rdb$database;\n\nselect 2 from rdb$database", "x.sql")
    with pytest.raises(FbbenchError, match=r"y\.sql:2: quoted text"):
        split("select 1 from rdb$database;\nselect 'open from rdb$database;", "y.sql")
    with pytest.raises(FbbenchError, match=r"z\.sql:1: unknown parameter \$\{nope\}"):
        substitute("select ${nope} from rdb$database;", {"amount": 1}, "z.sql")


@pytest.fixture(scope="module")
def engine5(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("scripts-work")
    return prepare_runtime("5.0", work), work


def test_procedures_and_triggers_run(engine5, tmp_path: Path) -> None:
    runtime = engine5[0]
    database = str(tmp_path / "bank.fdb")
    run_in_engine(runtime, "tests.foundation_child:create_foreign_database", database)
    script = tmp_path / "bank.sql"
    script.write_text(SCRIPT.replace("${amount}", "10"))
    rows = run_in_engine(runtime, "tests.foundation_child:run_script_and_query", database, str(script),
                         "select a.id, a.balance, a.note, (select count(*) from audit_log) from account a order by 1")
    assert [[r[0], float(r[1]), r[2], r[3]] for r in rows] == [[1, 10.0, "it's; not the end", 2], [2, 5.0, "two", 2]]


def test_syntax_error_reports_file_and_line(engine5, tmp_path: Path) -> None:
    runtime, _ = engine5
    database = str(tmp_path / "broken.fdb")
    run_in_engine(runtime, "tests.foundation_child:create_foreign_database", database)
    script = tmp_path / "broken.sql"
    script.write_text(
        "create table t1 (id integer);\n"
        "set term ^ ;\n"
        "create procedure p1 as\n"
        "begin\n"
        "  insert into t1 values (1);\n"
        "  insert int t1 values (2);\n"  # line 6: the typo
        "end^\n"
        "set term ; ^\n"
    )
    with pytest.raises(FirebirdError) as caught:
        run_in_engine(runtime, "tests.foundation_child:run_script_and_query", database, str(script),
                      "select 1 from rdb$database")
    message = caught.value.message
    assert message.startswith("broken.sql:6:"), message
    assert "Token unknown" in message

/*
 * IBSurgeon's INSERT/UPDATE/DELETE test: one table with five indexes (the primary key and four
 * more, on columns every update changes), filled, changed and emptied in batches. Its figures
 * are the engine's write path: record and index page writes, back versions, garbage, and — with
 * forced writes on — every commit's wait for the disk.
 *
 * Every value follows from the row's id: no RAND(), so a batch restarted by the engine repeats
 * exactly the same work and the same scale always writes the same rows.
 */

create table iud_test (
    id          bigint not null,
    amount      integer not null,
    code        varchar(20) character set ascii not null,
    name        varchar(100) character set ascii not null,
    changed_at  timestamp not null,
    flag        smallint not null,
    constraint iud_test_pk primary key (id)
);

create index iud_test_amount on iud_test (amount);
create index iud_test_code on iud_test (code);
create index iud_test_changed_at on iud_test (changed_at);
create descending index iud_test_flag_amount on iud_test (flag, amount);

set term ^ ;

-- Rows p_first .. p_first + p_count - 1; ROWS_DONE: how many were inserted.
create procedure iud_insert (p_first bigint, p_count integer)
returns (rows_done integer)
as
  declare id bigint;
  declare last_id bigint;
begin
  id = p_first;
  last_id = p_first + p_count - 1;
  rows_done = 0;
  while (id <= last_id) do
  begin
    insert into iud_test (id, amount, code, name, changed_at, flag)
    values (:id, mod(:id * 48271, 2147483647) / 2148, 'C' || mod(:id * 7919, 1000003),
            'row ' || :id || ' of the insert, update and delete test',
            dateadd(mod(:id, 31536000) second to timestamp '2025-01-01 00:00:00'), mod(:id, 3));
    rows_done = rows_done + 1;
    id = id + 1;
  end
  suspend;
end^

-- Every indexed column changes, so every index gets a new entry for every row.
create procedure iud_update (p_first bigint, p_last bigint)
returns (rows_done integer)
as
begin
  update iud_test
     set amount = amount + 1,
         code = 'U' || substring(code from 2),
         changed_at = dateadd(1 second to changed_at),
         flag = mod(flag + 1, 3)
   where id between :p_first and :p_last;
  rows_done = row_count;
  suspend;
end^

create procedure iud_delete (p_first bigint, p_last bigint)
returns (rows_done integer)
as
begin
  delete from iud_test where id between :p_first and :p_last;
  rows_done = row_count;
  suspend;
end^

set term ; ^

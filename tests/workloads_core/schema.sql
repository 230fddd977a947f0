-- Schema of the native load core tests: tiny tables, procedures that make each outcome class
-- happen on purpose, and a log that records every parameter the core binds.

create table param_log (
    id bigint not null primary key,
    run_no integer,
    att integer,
    unit_name varchar(10),
    a bigint,
    b bigint,
    c bigint,
    s varchar(40)
);
create sequence log_seq;

create table counter (id integer not null primary key, n integer);
create table numbers (n integer not null primary key);
create table items (id integer not null primary key, qty integer);

create exception ex_by_design 'rolled back by design';
create exception ex_other 'a failure the workload does not expect';

SET TERM ^ ;

create procedure log_a (run_no integer, att integer, a bigint, b bigint, c bigint, s varchar(40))
as
begin
  insert into param_log values (next value for log_seq, :run_no, :att, 'A', :a, :b, :c, :s);
end^

create procedure log_b (run_no integer, att integer, home integer, seed bigint)
as
begin
  insert into param_log values (next value for log_seq, :run_no, :att, 'B', :home, :seed, null, null);
end^

create procedure by_design
as
begin
  exception ex_by_design;
end^

create procedure other_exception
as
begin
  exception ex_other;
end^

create procedure two returns (n integer)
as
begin
  n = 2;
end^

create procedure fill (rows_wanted integer)
as
declare i integer = 1;
begin
  while (i <= rows_wanted) do
  begin
    insert into items values (:i, :i);
    i = i + 1;
  end
  i = 1;
  while (i <= 1000) do
  begin
    insert into numbers values (:i);
    i = i + 1;
  end
  insert into counter values (1, 0);
  insert into counter values (2, 0);
  insert into counter values (3, 0);
end^

SET TERM ; ^

commit;
execute procedure fill(100);
commit;

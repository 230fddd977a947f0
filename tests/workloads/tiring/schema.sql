create table pace (id integer not null primary key, ms double precision not null);

set term ^ ;
-- Busy for the row's milliseconds of wall time ('NOW' is read anew at each evaluation, unlike
-- CURRENT_TIMESTAMP), then the next unit's are ${growth} times as many.
create procedure work
as
declare ms double precision;
declare started timestamp;
declare spins bigint = 0;
begin
  select ms from pace where id = 1 into :ms;
  update pace set ms = ms * ${growth} where id = 1;
  started = cast('NOW' as timestamp);
  while (datediff(millisecond from started to cast('NOW' as timestamp)) < ms) do spins = spins + 1;
end^
set term ; ^

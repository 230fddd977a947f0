create table spin_state (id integer not null primary key, seed bigint);

set term ^ ;
-- CPU only: p_loops x 100 rounds of integer arithmetic on local variables, no table touched, so
-- that a unit's time is this loop and the loop's length is the work (see workload.toml).
create procedure spin (p_loops integer, p_seed bigint)
returns (result bigint)
as
declare i integer = 0;
declare j integer;
declare x bigint;
begin
  x = mod(p_seed, 1000003);
  while (i < p_loops) do
  begin
    j = 0;
    while (j < 100) do
    begin
      x = mod(x * 48271 + j, 2147483647);
      j = j + 1;
    end
    i = i + 1;
  end
  result = x;
  suspend;
end^
set term ; ^

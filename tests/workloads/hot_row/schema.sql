create table counter (id integer not null primary key, hits bigint not null);

set term ^ ;
-- A little work between the update and the commit widens the window in which another
-- attachment finds the row updated by a transaction it cannot see.
create procedure bump
as
declare i integer = 0;
begin
  update counter set hits = hits + 1 where id = 1;
  while (i < 2000) do i = i + 1;
end^
set term ; ^

create table hot (id integer not null primary key, v bigint);

set term ^ ;
create procedure hot_load (p_rows integer) as
  declare i integer = 1;
begin
  while (i <= p_rows) do
  begin
    insert into hot values (:i, 0);
    i = i + 1;
  end
end^

-- The flaw on purpose: rand() decides, row by row, which rows this statement updates.
create procedure hot_bump as
begin
  update hot set v = v + 1 where id <= ${rows} and rand() < 0.3;
end^
set term ; ^

set term ^ ;
create procedure spin (p_round integer, p_work integer) as
declare i integer = 0;
begin
  while (i < p_work) do i = i + 1;
end^
set term ; ^

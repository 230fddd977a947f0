create table region (id integer not null primary key, code integer not null);
create table customer (id integer not null primary key, region_id integer, name varchar(40));
create index region_code on region (code);
create index customer_region on customer (region_id);

set term ^ ;
create procedure load_rows (p_customers integer, p_regions integer)
as
declare i integer = 1;
begin
  while (i <= p_regions) do
  begin
    insert into region values (:i, :i);
    i = i + 1;
  end
  i = 1;
  while (i <= p_customers) do
  begin
    insert into customer values (:i, mod(:i, :p_regions) + 1, 'customer ' || :i);
    i = i + 1;
  end
end^
set term ; ^

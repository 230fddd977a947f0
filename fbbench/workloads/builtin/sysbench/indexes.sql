/*
 * After the rows, as sysbench's prepare does: the secondary index on k (--create-secondary=on),
 * and the id generator moved past the rows, so that oltp_insert's generated ids follow them (the
 * rows were loaded with their ids given, so the same scale always builds the same table).
 */
CREATE INDEX k_1 ON sbtest1(k);

set term ^ ;
execute block as
  declare generator varchar(63);
  declare current_value bigint;
begin
  select trim(rdb$generator_name) from rdb$relation_fields
  where rdb$relation_name = 'SBTEST1' and rdb$field_name = 'ID'
  into :generator;
  execute statement 'select gen_id("' || generator || '", 0) from rdb$database' into :current_value;
  execute statement 'select gen_id("' || generator || '", ' || (${table_size} - current_value) || ') from rdb$database'
    into :current_value;
end^
set term ; ^

/*
 * TPC-C-derived workload: keys and indices, built after the population.
 *
 * Firebird builds an index over existing rows by sorting the keys once (and Firebird 5 can
 * spread that over ParallelWorkers), instead of inserting every key into the b-tree as rows
 * arrive; the loaders never read the tables they fill, so nothing needs the indices earlier.
 *
 * HISTORY has no key (clause 1.3.1). No foreign keys: the specification does not require them,
 * each would add an index lookup to every insert, and the consistency checks verify the
 * relationships after a run instead.
 */

alter table warehouse  add constraint warehouse_pk  primary key (w_id);
alter table district   add constraint district_pk   primary key (d_w_id, d_id);
alter table customer   add constraint customer_pk   primary key (c_w_id, c_d_id, c_id);
alter table new_order  add constraint new_order_pk  primary key (no_w_id, no_d_id, no_o_id);
alter table orders     add constraint orders_pk     primary key (o_w_id, o_d_id, o_id);
alter table order_line add constraint order_line_pk primary key (ol_w_id, ol_d_id, ol_o_id, ol_number);
alter table item       add constraint item_pk       primary key (i_id);
alter table stock      add constraint stock_pk      primary key (s_w_id, s_i_id);

-- Payment and Order-Status select 60 % of their customers by last name, in C_FIRST order
-- (clause 2.5.2.2): the index delivers the rows of one name already sorted.
create index customer_last_name on customer (c_w_id, c_d_id, c_last, c_first);

-- Order-Status reads the customer's most recent order (clause 2.6.2.2).
create index orders_customer on orders (o_w_id, o_d_id, o_c_id, o_id);

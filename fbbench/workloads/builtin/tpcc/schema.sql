/*
 * TPC-C-derived workload: the schema (TPC-C standard specification v5.11, clause 1.3).
 *
 * Table and column names follow the specification; ORDER, NEW-ORDER and ORDER-LINE become
 * ORDERS, NEW_ORDER and ORDER_LINE (ORDER is a reserved word, '-' is not allowed in names).
 *
 * No primary keys or indices here: the tables are filled first and indexes.sql builds every
 * index afterwards. Firebird builds an index over existing rows by sorting them, which is much
 * faster than maintaining it row by row during a bulk load (and the loader never reads a table
 * it fills, so it does not need them).
 *
 * Text columns use CHARACTER SET ASCII: the data is ASCII by definition (clause 4.3.2.2), and
 * the database default (UTF8) would reserve four bytes per character in every record buffer.
 * NUMERIC(p, s) as in the specification; Firebird stores them as scaled integers, so sums of
 * money are exact and the consistency checks can compare them with '='.
 */

create table warehouse (
    w_id        integer not null,
    w_name      varchar(10) character set ascii,
    w_street_1  varchar(20) character set ascii,
    w_street_2  varchar(20) character set ascii,
    w_city      varchar(20) character set ascii,
    w_state     char(2) character set ascii,
    w_zip       char(9) character set ascii,
    w_tax       numeric(4, 4),
    w_ytd       numeric(12, 2)
);

create table district (
    d_id        integer not null,
    d_w_id      integer not null,
    d_name      varchar(10) character set ascii,
    d_street_1  varchar(20) character set ascii,
    d_street_2  varchar(20) character set ascii,
    d_city      varchar(20) character set ascii,
    d_state     char(2) character set ascii,
    d_zip       char(9) character set ascii,
    d_tax       numeric(4, 4),
    d_ytd       numeric(12, 2),
    d_next_o_id integer
);

create table customer (
    c_id           integer not null,
    c_d_id         integer not null,
    c_w_id         integer not null,
    c_first        varchar(16) character set ascii,
    c_middle       char(2) character set ascii,
    c_last         varchar(16) character set ascii,
    c_street_1     varchar(20) character set ascii,
    c_street_2     varchar(20) character set ascii,
    c_city         varchar(20) character set ascii,
    c_state        char(2) character set ascii,
    c_zip          char(9) character set ascii,
    c_phone        char(16) character set ascii,
    c_since        timestamp,
    c_credit       char(2) character set ascii,
    c_credit_lim   numeric(12, 2),
    c_discount     numeric(4, 4),
    c_balance      numeric(12, 2),
    c_ytd_payment  numeric(12, 2),
    c_payment_cnt  integer,
    c_delivery_cnt integer,
    c_data         varchar(500) character set ascii
);

-- HISTORY has no primary key in the specification (clause 1.3.1): rows are only ever appended.
create table history (
    h_c_id   integer,
    h_c_d_id integer,
    h_c_w_id integer,
    h_d_id   integer,
    h_w_id   integer,
    h_date   timestamp,
    h_amount numeric(6, 2),
    h_data   varchar(24) character set ascii
);

create table new_order (
    no_o_id integer not null,
    no_d_id integer not null,
    no_w_id integer not null
);

create table orders (
    o_id         integer not null,
    o_d_id       integer not null,
    o_w_id       integer not null,
    o_c_id       integer,
    o_entry_d    timestamp,
    o_carrier_id integer,            -- null until the order is delivered
    o_ol_cnt     integer,
    o_all_local  integer
);

create table order_line (
    ol_o_id        integer not null,
    ol_d_id        integer not null,
    ol_w_id        integer not null,
    ol_number      integer not null,
    ol_i_id        integer,
    ol_supply_w_id integer,
    ol_delivery_d  timestamp,        -- null until the order is delivered
    ol_quantity    integer,
    ol_amount      numeric(6, 2),
    ol_dist_info   char(24) character set ascii
);

create table item (
    i_id    integer not null,
    i_im_id integer,
    i_name  varchar(24) character set ascii,
    i_price numeric(5, 2),
    i_data  varchar(50) character set ascii
);

create table stock (
    s_i_id       integer not null,
    s_w_id       integer not null,
    s_quantity   integer,
    s_dist_01    char(24) character set ascii,
    s_dist_02    char(24) character set ascii,
    s_dist_03    char(24) character set ascii,
    s_dist_04    char(24) character set ascii,
    s_dist_05    char(24) character set ascii,
    s_dist_06    char(24) character set ascii,
    s_dist_07    char(24) character set ascii,
    s_dist_08    char(24) character set ascii,
    s_dist_09    char(24) character set ascii,
    s_dist_10    char(24) character set ascii,
    s_ytd        integer,
    s_order_cnt  integer,
    s_remote_cnt integer,
    s_data       varchar(50) character set ascii
);

/*
 * C-Load, the NURand constant C the population used for C_LAST (clause 2.1.6). Before a run,
 * tpcc_c_run (load.sql) picks the run's C-Run from it so that |C-Run - C-Load| obeys the C-Delta
 * rule of clause 2.1.6.1 (workload.toml, [constants]).
 */
create table tpcc_nurand (
    nurand_a integer not null primary key,
    c_load   integer not null
);

-- Scratch space of the ORDERS loader: one random permutation of the customer ids per district
-- (O_C_ID, clause 4.3.3.1). Private to each attachment, so parallel loaders never meet here.
create global temporary table tpcc_load_permutation (
    sort_key bigint,
    c_id     integer
) on commit delete rows;

-- The by-design rollback of 1 % of New-Order transactions (clause 2.4.2.3). fbbench counts a
-- unit that ends with this exception as "rolled back", not as a failure (rollback_on).
create exception tpcc_rollback 'TPC-C New-Order rolled back by design: unused item number';

-- A row the specification guarantees to exist is missing: the database is not a valid
-- TPC-C population (an error, never a by-design outcome).
create exception tpcc_missing 'TPC-C data missing';

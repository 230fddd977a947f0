/*
 * orders: a small order-entry database in the manner of a vendor demo: products with prices,
 * customers, orders and their lines, and an inventory row per product that a trigger on the
 * order lines keeps up to date (README.md).
 *
 * Keys and indices are created with the tables: the population is small, and the unit reads
 * through them. Text is CHARACTER SET ASCII, money NUMERIC(18, 2) (exact, so the checks compare
 * with '=').
 */

create table customers (
    id          integer not null primary key,
    name        varchar(60) character set ascii not null,
    city        varchar(40) character set ascii not null,
    created_at  timestamp default current_timestamp not null
);

create table products (
    id     integer not null primary key,
    name   varchar(60) character set ascii not null,
    price  numeric(18, 2) not null
);

-- QTY_ORDERED is what the order lines hold: the trigger below adds and subtracts it.
create table inventory (
    product_id   integer not null primary key references products (id),
    qty_on_hand  integer not null,
    qty_ordered  bigint default 0 not null,
    changed_at   timestamp
);

-- BATCH_ID: the unit call that generated the order, ROUND_NO its round (with rounds = 2 the
-- second round deletes the first round's orders and generates new ones).
create table orders (
    id            bigint not null primary key,
    customer_id   integer not null references customers (id),
    order_date    timestamp not null,
    batch_id      bigint not null,
    round_no      smallint not null,
    line_count    integer default 0 not null,
    total_qty     integer default 0 not null,
    total_amount  numeric(18, 2) default 0 not null
);
create index orders_batch on orders (batch_id, round_no);

create table order_lines (
    id          bigint not null primary key,
    order_id    bigint not null references orders (id) on delete cascade,
    line_no     smallint not null,
    product_id  integer not null,
    qty         integer not null,
    price       numeric(18, 2) not null,
    amount      numeric(18, 2) not null
);

create sequence order_seq;
create sequence order_line_seq;
create sequence batch_seq;

set term ^ ;

-- Every order line moves its product's ordered quantity: the hot rows of this workload.
create trigger order_lines_inventory for order_lines after insert or update or delete
as
begin
  if (updating or deleting) then
    update inventory set qty_ordered = qty_ordered - old.qty, changed_at = current_timestamp
      where product_id = old.product_id;
  if (inserting or updating) then
    update inventory set qty_ordered = qty_ordered + new.qty, changed_at = current_timestamp
      where product_id = new.product_id;
end^

set term ; ^

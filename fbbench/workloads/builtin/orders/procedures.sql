/*
 * orders: the population (INITALL) and the order generator, in two variants (README.md).
 *
 * orders_generate_flawed draws the number of lines, the product ids and the quantities with
 * RAND() inside PSQL, as the published procedure did. orders_generate_fixed draws the same
 * things from the seed the client passes, with a Lehmer generator:
 *
 *     x = mod(x * 48271, 2147483647);          -- next state, 1 .. 2147483646
 *     v = lo + (x - 1) * n / 2147483646;       -- one of n values from lo
 *
 * Everything else is the same, line for line. The difference matters under read consistency
 * (Firebird 4+, ReadConsistency = 1): a statement that meets a row a concurrent transaction
 * changed and committed is undone and executed again; EXECUTE PROCEDURE is one statement, so
 * the whole call starts over. The fixed variant then orders the same products again (and still
 * holds the locks it took), the flawed one orders other products, meets other transactions'
 * rows, and after 10 restarts fails with "unable to get a stable set of rows in the source
 * tables".
 */

set term ^ ;

-- INITALL: ${customers} customers, ${products} products with prices 1.00 .. 500.00 and their
-- inventory rows.
create procedure orders_initall (p_seed bigint)
as
  declare x bigint;
  declare i integer;
begin
  x = mod(abs(mod(p_seed, 2147483646)), 2147483646) + 1;
  i = 1;
  while (i <= ${customers}) do
  begin
    x = mod(x * 48271, 2147483647);
    insert into customers (id, name, city)
      values (:i, 'customer ' || :i, 'city ' || (1 + (:x - 1) * 100 / 2147483646));
    i = i + 1;
  end
  i = 1;
  while (i <= ${products}) do
  begin
    x = mod(x * 48271, 2147483647);
    insert into products (id, name, price) values (:i, 'product ' || :i, (100 + (:x - 1) * 49901 / 2147483646) * 0.01);
    x = mod(x * 48271, 2147483647);
    insert into inventory (product_id, qty_on_hand) values (:i, 100 + (:x - 1) * 900 / 2147483646);
    i = i + 1;
  end
end^

-- P_ORDERS orders of 1 .. 6 lines (product 1 .. ${products}, quantity 1 .. 10) for one
-- customer, each order's totals updated from its lines; with P_ROUNDS rounds, each round after
-- the first deletes the previous round's orders first.
create procedure orders_generate_fixed (p_customer integer, p_orders integer, p_rounds integer, p_seed bigint)
returns (orders_made integer, lines_made integer)
as
  declare x bigint;
  declare batch bigint;
  declare round_no integer = 1;
  declare i integer;
  declare order_id bigint;
  declare line_count integer;
  declare line_no integer;
  declare product integer;
  declare qty integer;
begin
  x = mod(abs(mod(p_seed, 2147483646)), 2147483646) + 1;
  batch = gen_id(batch_seq, 1);
  orders_made = 0;
  lines_made = 0;
  while (round_no <= p_rounds) do
  begin
    if (round_no > 1) then
      delete from orders where batch_id = :batch and round_no = :round_no - 1;
    i = 0;
    while (i < p_orders) do
    begin
      order_id = next value for order_seq;
      insert into orders (id, customer_id, order_date, batch_id, round_no)
        values (:order_id, :p_customer, current_timestamp, :batch, :round_no);
      x = mod(x * 48271, 2147483647);  line_count = 1 + (x - 1) * 6 / 2147483646;
      line_no = 1;
      while (line_no <= line_count) do
      begin
        x = mod(x * 48271, 2147483647);  product = 1 + (x - 1) * ${products} / 2147483646;
        x = mod(x * 48271, 2147483647);  qty = 1 + (x - 1) * 10 / 2147483646;
        insert into order_lines (id, order_id, line_no, product_id, qty, price, amount)
          select next value for order_line_seq, :order_id, :line_no, p.id, :qty, p.price, :qty * p.price
          from products p where p.id = :product;
        line_no = line_no + 1;
      end
      update orders
        set line_count = (select count(*) from order_lines l where l.order_id = :order_id),
            total_qty = (select sum(l.qty) from order_lines l where l.order_id = :order_id),
            total_amount = (select sum(l.amount) from order_lines l where l.order_id = :order_id)
        where id = :order_id;
      orders_made = orders_made + 1;
      lines_made = lines_made + line_count;
      i = i + 1;
    end
    round_no = round_no + 1;
  end
end^

-- The published way: RAND() inside the procedure. Kept to show what it does under read
-- consistency; do not copy it.
create procedure orders_generate_flawed (p_customer integer, p_orders integer, p_rounds integer, p_seed bigint)
returns (orders_made integer, lines_made integer)
as
  declare batch bigint;
  declare round_no integer = 1;
  declare i integer;
  declare order_id bigint;
  declare line_count integer;
  declare line_no integer;
  declare product integer;
  declare qty integer;
begin
  batch = gen_id(batch_seq, 1);
  orders_made = 0;
  lines_made = 0;
  while (round_no <= p_rounds) do
  begin
    if (round_no > 1) then
      delete from orders where batch_id = :batch and round_no = :round_no - 1;
    i = 0;
    while (i < p_orders) do
    begin
      order_id = next value for order_seq;
      insert into orders (id, customer_id, order_date, batch_id, round_no)
        values (:order_id, :p_customer, current_timestamp, :batch, :round_no);
      line_count = 1 + floor(rand() * 6);
      line_no = 1;
      while (line_no <= line_count) do
      begin
        product = 1 + floor(rand() * ${products});
        qty = 1 + floor(rand() * 10);
        insert into order_lines (id, order_id, line_no, product_id, qty, price, amount)
          select next value for order_line_seq, :order_id, :line_no, p.id, :qty, p.price, :qty * p.price
          from products p where p.id = :product;
        line_no = line_no + 1;
      end
      update orders
        set line_count = (select count(*) from order_lines l where l.order_id = :order_id),
            total_qty = (select sum(l.qty) from order_lines l where l.order_id = :order_id),
            total_amount = (select sum(l.amount) from order_lines l where l.order_id = :order_id)
        where id = :order_id;
      orders_made = orders_made + 1;
      lines_made = lines_made + line_count;
      i = i + 1;
    end
    round_no = round_no + 1;
  end
end^

set term ; ^

/*
 * TPC-C-derived workload: the five transactions as stored procedures (clauses 2.4 - 2.8).
 *
 * The client (fbbench's load core) calls them with EXECUTE PROCEDURE and passes the inputs the
 * specification draws at the terminal: the home warehouse, a district, NURand customer and
 * item numbers (with the run's C values, clause 2.1.6) and a seed. Every other random choice
 * (order-line count, the 1 % rollback, remote warehouses, by-name or by-id, amounts,
 * quantities, carrier) is drawn here from the seed with the generator of random.sql, never
 * with RAND(): a statement restart under Firebird 4+ read consistency repeats exactly the same
 * work. The outputs the audits count (OL_CNT, REMOTE_LINES, BY_NAME, REMOTE) are returned.
 *
 * Created after indexes.sql on purpose: Firebird compiles a procedure's statements when it is
 * created, and the creating attachment keeps that compiled form; an index created later is
 * then ignored by it in that attachment (measured on 3.0, 4.0 and 5.0).
 *
 * Row-lock order, to keep waits short and free of deadlocks: New-Order locks STOCK rows in
 * (warehouse, item) order and then its DISTRICT row; Payment locks CUSTOMER, then DISTRICT,
 * then WAREHOUSE; Delivery goes through the districts in order. The hottest rows (DISTRICT for
 * New-Order, WAREHOUSE and DISTRICT for Payment) are updated as late as possible, so they stay
 * locked for the shortest time before the commit.
 *
 * Every UPDATE that must change exactly one row runs in a small loop: under concurrent updates,
 * Firebird 3's READ COMMITTED occasionally lets a searched UPDATE change no row at all although
 * the row exists, instead of waiting or reporting a conflict (measured here: about one New-Order
 * or Payment in 5,000 at 4 attachments on one warehouse; not seen on 4.0 / 5.0, not even with
 * ReadConsistency = 0). Left alone, that silently loses a payment or a stock update. The loop
 * runs the statement again - what Firebird 4+ does itself when it restarts a statement - and
 * RETRIES reports how often that happened (0 on a healthy engine). A row still missing after
 * ten tries is an error (TPCC_MISSING).
 */

set term ^ ;

/*
 * The order lines of a New-Order, as rows: item (from the client), supply warehouse and
 * quantity (from the generator state p_x). 1 % of the lines come from a remote warehouse when
 * there is more than one (clause 2.4.1.5); with p_rollback = 1 the last line names an unused
 * item number (clause 2.4.1.4). Deterministic: the same arguments give the same rows, so
 * New-Order can read them twice, in two different orders.
 */
create procedure tpcc_new_order_lines (
    p_w_id integer, p_x bigint, p_ol_cnt integer, p_rollback integer,
    p_i01 integer, p_i02 integer, p_i03 integer, p_i04 integer, p_i05 integer,
    p_i06 integer, p_i07 integer, p_i08 integer, p_i09 integer, p_i10 integer,
    p_i11 integer, p_i12 integer, p_i13 integer, p_i14 integer, p_i15 integer)
returns (ol_number integer, ol_i_id integer, ol_supply_w_id integer, ol_quantity integer)
as
  declare x bigint;
begin
  x = p_x;
  ol_number = 1;
  while (ol_number <= p_ol_cnt) do
  begin
    ol_i_id = decode(ol_number, 1, p_i01, 2, p_i02, 3, p_i03, 4, p_i04, 5, p_i05, 6, p_i06, 7, p_i07, 8, p_i08,
                     9, p_i09, 10, p_i10, 11, p_i11, 12, p_i12, 13, p_i13, 14, p_i14, 15, p_i15);
    if (p_rollback = 1 and ol_number = p_ol_cnt) then
      ol_i_id = ${items} + 1;
    ol_supply_w_id = p_w_id;
    x = mod(x * 48271, 2147483647);
    if (${warehouses} > 1 and (x - 1) * 100 / 2147483646 = 0) then
    begin  -- any other warehouse, uniformly
      x = mod(x * 48271, 2147483647);
      ol_supply_w_id = 1 + (x - 1) * (${warehouses} - 1) / 2147483646;
      if (ol_supply_w_id >= p_w_id) then
        ol_supply_w_id = ol_supply_w_id + 1;
    end
    x = mod(x * 48271, 2147483647);  ol_quantity = 1 + (x - 1) * 10 / 2147483646;  -- 1 .. 10
    suspend;
    ol_number = ol_number + 1;
  end
end^

/*
 * New-Order (clause 2.4): p_c_id = NURand(1023, 1, customers), p_i01 .. p_i15 =
 * NURand(8191, 1, items) (only the first OL_CNT are used), p_seed for the rest.
 * Raises TPCC_ROLLBACK for the 1 % by-design rollbacks, after the items before the unused one
 * were processed (clause 2.4.2.3).
 */
create procedure tpcc_new_order (
    p_w_id integer, p_d_id integer, p_c_id integer,
    p_i01 integer, p_i02 integer, p_i03 integer, p_i04 integer, p_i05 integer,
    p_i06 integer, p_i07 integer, p_i08 integer, p_i09 integer, p_i10 integer,
    p_i11 integer, p_i12 integer, p_i13 integer, p_i14 integer, p_i15 integer,
    p_seed bigint)
returns (o_id integer, ol_cnt integer, remote_lines integer, total_amount numeric(12, 2), retries integer)
as
  declare x bigint;
  declare tries integer;
  declare rollback_ integer;
  declare w_tax numeric(4, 4);
  declare d_tax numeric(4, 4);
  declare c_discount numeric(4, 4);
  declare c_last varchar(16) character set ascii;
  declare c_credit char(2) character set ascii;
  declare ol_number integer;
  declare ol_i_id integer;
  declare ol_supply_w_id integer;
  declare ol_quantity integer;
  declare i_price numeric(5, 2);
  declare dist_info char(24) character set ascii;
  declare amount numeric(6, 2);
  declare total numeric(15, 2) = 0;
begin
  x = tpcc_rand_init(p_seed, 0);
  x = mod(x * 48271, 2147483647);  ol_cnt = 5 + (x - 1) * 11 / 2147483646;          -- 5 .. 15
  x = mod(x * 48271, 2147483647);  rollback_ = iif((x - 1) * 100 / 2147483646 = 0, 1, 0);  -- 1 %
  x = mod(x * 48271, 2147483647);  -- the lines' own stream starts here

  select w_tax from warehouse where w_id = :p_w_id into :w_tax;
  select c_discount, c_last, c_credit from customer
    where c_w_id = :p_w_id and c_d_id = :p_d_id and c_id = :p_c_id
    into :c_discount, :c_last, :c_credit;
  if (c_discount is null) then
    exception tpcc_missing 'customer ' || p_w_id || '/' || p_d_id || '/' || p_c_id || ' not found';

  -- Items and stock, in (supply warehouse, item) order.
  remote_lines = 0;
  retries = 0;
  for select ol_i_id, ol_supply_w_id, ol_quantity
      from tpcc_new_order_lines(:p_w_id, :x, :ol_cnt, :rollback_, :p_i01, :p_i02, :p_i03, :p_i04, :p_i05,
                                :p_i06, :p_i07, :p_i08, :p_i09, :p_i10, :p_i11, :p_i12, :p_i13, :p_i14, :p_i15)
      order by ol_supply_w_id, ol_i_id
      into :ol_i_id, :ol_supply_w_id, :ol_quantity do
  begin
    i_price = null;
    select i_price from item where i_id = :ol_i_id into :i_price;
    if (i_price is null) then
      exception tpcc_rollback;  -- the unused item number: undo everything
    tries = 0;
    while (tries < 10) do
    begin
      update stock set
          s_quantity = iif(s_quantity >= :ol_quantity + 10, s_quantity - :ol_quantity,
                           s_quantity - :ol_quantity + 91),
          s_ytd = s_ytd + :ol_quantity,
          s_order_cnt = s_order_cnt + 1,
          s_remote_cnt = s_remote_cnt + iif(:ol_supply_w_id = :p_w_id, 0, 1)
        where s_w_id = :ol_supply_w_id and s_i_id = :ol_i_id;
      if (row_count > 0) then leave;
      tries = tries + 1;
    end
    if (tries = 10) then
      exception tpcc_missing 'stock ' || ol_supply_w_id || '/' || ol_i_id || ' not found';
    retries = retries + tries;
    if (ol_supply_w_id <> p_w_id) then
      remote_lines = remote_lines + 1;
  end

  -- The district's order number, then the order.
  tries = 0;
  while (tries < 10) do
  begin
    update district set d_next_o_id = d_next_o_id + 1
      where d_w_id = :p_w_id and d_id = :p_d_id
      returning old.d_next_o_id, d_tax into :o_id, :d_tax;
    if (row_count > 0) then leave;
    tries = tries + 1;
  end
  if (tries = 10) then
    exception tpcc_missing 'district ' || p_w_id || '/' || p_d_id || ' not found';
  retries = retries + tries;
  insert into orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
    values (:o_id, :p_d_id, :p_w_id, :p_c_id, localtimestamp, null, :ol_cnt, iif(:remote_lines = 0, 1, 0));
  insert into new_order (no_o_id, no_d_id, no_w_id) values (:o_id, :p_d_id, :p_w_id);

  -- The order lines, in entry order (items and stock rows are already in this transaction).
  for select ol_number, ol_i_id, ol_supply_w_id, ol_quantity
      from tpcc_new_order_lines(:p_w_id, :x, :ol_cnt, :rollback_, :p_i01, :p_i02, :p_i03, :p_i04, :p_i05,
                                :p_i06, :p_i07, :p_i08, :p_i09, :p_i10, :p_i11, :p_i12, :p_i13, :p_i14, :p_i15)
      order by ol_number
      into :ol_number, :ol_i_id, :ol_supply_w_id, :ol_quantity do
  begin
    select i_price from item where i_id = :ol_i_id into :i_price;
    select decode(:p_d_id, 1, s_dist_01, 2, s_dist_02, 3, s_dist_03, 4, s_dist_04, 5, s_dist_05,
                           6, s_dist_06, 7, s_dist_07, 8, s_dist_08, 9, s_dist_09, 10, s_dist_10)
      from stock where s_w_id = :ol_supply_w_id and s_i_id = :ol_i_id
      into :dist_info;
    amount = ol_quantity * i_price;
    insert into order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
                            ol_quantity, ol_amount, ol_dist_info)
      values (:o_id, :p_d_id, :p_w_id, :ol_number, :ol_i_id, :ol_supply_w_id, null,
              :ol_quantity, :amount, :dist_info);
    total = total + amount;
  end
  total_amount = total * (1 - c_discount) * (1 + w_tax + d_tax);
end^

/*
 * A customer chosen by last name (clauses 2.5.2.2, 2.6.2.2): of the customers with that name
 * in the district, sorted by C_FIRST, the one at position ceil(n / 2). p_name_number is
 * NURand(255, 0, 999); with fewer than 1000 customers per district (a test scale), only names
 * 0 .. customers - 1 exist, and the number is folded into that range.
 */
create procedure tpcc_customer_by_name (p_w_id integer, p_d_id integer, p_name_number integer)
returns (c_id integer)
as
  declare c_last varchar(16) character set ascii;
  declare n integer;
begin
  c_last = tpcc_last_name(iif(p_name_number < ${customers}, p_name_number, mod(p_name_number, ${customers})));
  select count(*) from customer
    where c_w_id = :p_w_id and c_d_id = :p_d_id and c_last = :c_last
    into :n;
  if (n = 0) then
    exception tpcc_missing 'no customer named ' || c_last || ' in district ' || p_w_id || '/' || p_d_id;
  select first 1 skip ((:n - 1) / 2) c_id from customer
    where c_w_id = :p_w_id and c_d_id = :p_d_id and c_last = :c_last
    order by c_first
    into :c_id;
end^

/*
 * Payment (clause 2.5): p_c_id = NURand(1023, 1, customers) and p_name_number =
 * NURand(255, 0, 999); the seed decides which one is used (60 % by last name), whether the
 * customer belongs to another warehouse (15 %, when there is more than one) and the amount.
 */
create procedure tpcc_payment (
    p_w_id integer, p_d_id integer, p_c_id integer, p_name_number integer, p_seed bigint)
returns (by_name integer, remote integer, c_id integer, c_balance numeric(12, 2), retries integer)
as
  declare x bigint;
  declare tries integer;
  declare c_w_id integer;
  declare c_d_id integer;
  declare h_amount numeric(6, 2);
  declare w_name varchar(10) character set ascii;
  declare d_name varchar(10) character set ascii;
begin
  x = tpcc_rand_init(p_seed, 0);
  x = mod(x * 48271, 2147483647);  by_name = iif((x - 1) * 100 / 2147483646 < 60, 1, 0);
  x = mod(x * 48271, 2147483647);
  remote = iif(${warehouses} > 1 and (x - 1) * 100 / 2147483646 < 15, 1, 0);
  c_w_id = p_w_id;
  c_d_id = p_d_id;
  if (remote = 1) then
  begin  -- a customer of any other warehouse, any district
    x = mod(x * 48271, 2147483647);  c_w_id = 1 + (x - 1) * (${warehouses} - 1) / 2147483646;
    if (c_w_id >= p_w_id) then
      c_w_id = c_w_id + 1;
    x = mod(x * 48271, 2147483647);  c_d_id = 1 + (x - 1) * 10 / 2147483646;
  end
  x = mod(x * 48271, 2147483647);  h_amount = (100 + (x - 1) * 499901 / 2147483646) * 0.01;  -- 1.00 .. 5000.00

  if (by_name = 1) then
    execute procedure tpcc_customer_by_name(:c_w_id, :c_d_id, :p_name_number) returning_values :c_id;
  else
    c_id = p_c_id;

  -- Bad-credit customers keep a log of their payments at the left of C_DATA (500 characters).
  retries = 0;
  tries = 0;
  while (tries < 10) do
  begin
    update customer set
        c_balance = c_balance - :h_amount,
        c_ytd_payment = c_ytd_payment + :h_amount,
        c_payment_cnt = c_payment_cnt + 1,
        c_data = iif(c_credit = 'BC',
                     substring(:c_id || ' ' || :c_d_id || ' ' || :c_w_id || ' ' || :p_d_id || ' ' || :p_w_id
                               || ' ' || :h_amount || ' | ' || c_data from 1 for 500),
                     c_data)
      where c_w_id = :c_w_id and c_d_id = :c_d_id and c_id = :c_id
      returning c_balance into :c_balance;
    if (row_count > 0) then leave;
    tries = tries + 1;
  end
  if (tries = 10) then
    exception tpcc_missing 'customer ' || c_w_id || '/' || c_d_id || '/' || c_id || ' not found';
  retries = retries + tries;

  tries = 0;
  while (tries < 10) do
  begin
    update district set d_ytd = d_ytd + :h_amount
      where d_w_id = :p_w_id and d_id = :p_d_id
      returning d_name into :d_name;
    if (row_count > 0) then leave;
    tries = tries + 1;
  end
  if (tries = 10) then
    exception tpcc_missing 'district ' || p_w_id || '/' || p_d_id || ' not found';
  retries = retries + tries;

  tries = 0;
  while (tries < 10) do
  begin
    update warehouse set w_ytd = w_ytd + :h_amount
      where w_id = :p_w_id
      returning w_name into :w_name;
    if (row_count > 0) then leave;
    tries = tries + 1;
  end
  if (tries = 10) then
    exception tpcc_missing 'warehouse ' || p_w_id || ' not found';
  retries = retries + tries;
  insert into history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    values (:c_id, :c_d_id, :c_w_id, :p_d_id, :p_w_id, localtimestamp, :h_amount, :w_name || '    ' || :d_name);
end^

/*
 * Order-Status (clause 2.6), read-only: the customer (60 % by last name), their most recent
 * order and its lines. LINES is the number of order lines read.
 */
create procedure tpcc_order_status (
    p_w_id integer, p_d_id integer, p_c_id integer, p_name_number integer, p_seed bigint)
returns (by_name integer, c_id integer, c_balance numeric(12, 2), o_id integer, o_carrier_id integer,
         lines integer)
as
  declare x bigint;
  declare c_first varchar(16) character set ascii;
  declare c_middle char(2) character set ascii;
  declare c_last varchar(16) character set ascii;
  declare o_entry_d timestamp;
  declare ol_i_id integer;
  declare ol_supply_w_id integer;
  declare ol_quantity integer;
  declare ol_amount numeric(6, 2);
  declare ol_delivery_d timestamp;
begin
  x = tpcc_rand_init(p_seed, 0);
  x = mod(x * 48271, 2147483647);  by_name = iif((x - 1) * 100 / 2147483646 < 60, 1, 0);
  if (by_name = 1) then
    execute procedure tpcc_customer_by_name(:p_w_id, :p_d_id, :p_name_number) returning_values :c_id;
  else
    c_id = p_c_id;
  select c_balance, c_first, c_middle, c_last from customer
    where c_w_id = :p_w_id and c_d_id = :p_d_id and c_id = :c_id
    into :c_balance, :c_first, :c_middle, :c_last;

  select first 1 o_id, o_entry_d, o_carrier_id from orders
    where o_w_id = :p_w_id and o_d_id = :p_d_id and o_c_id = :c_id
    order by o_id desc
    into :o_id, :o_entry_d, :o_carrier_id;
  lines = 0;
  for select ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d from order_line
      where ol_w_id = :p_w_id and ol_d_id = :p_d_id and ol_o_id = :o_id
      into :ol_i_id, :ol_supply_w_id, :ol_quantity, :ol_amount, :ol_delivery_d do
    lines = lines + 1;
end^

/*
 * Delivery (clause 2.7), all 10 districts of the warehouse in one transaction: the oldest
 * undelivered order of each district gets the carrier, its lines the delivery date, and the
 * customer's balance the order's amount. A district without undelivered orders is skipped
 * (SKIPPED, clause 2.7.4.2).
 *
 * Two Deliveries of the same warehouse can pick the same order. Under Firebird 4+ read
 * consistency the second one's statement is restarted and picks the next order. Firebird 3's
 * READ COMMITTED can instead let the second one's UPDATE of ORDERS go through once the first
 * has committed (measured: 8 of 4,860 Delivery transactions, 4 attachments on one small
 * warehouse), which would deliver the order twice and credit the customer twice. So an order
 * counts as claimed only when this transaction deleted its NEW_ORDER row; otherwise the ORDERS
 * row gets back the carrier it had and the next oldest order is picked. REPICKED counts that
 * (0 on Firebird 4 and 5).
 */
create procedure tpcc_delivery (p_w_id integer, p_seed bigint)
returns (delivered integer, skipped integer, retries integer, repicked integer)
as
  declare x bigint;
  declare tries integer;
  declare picks integer;
  declare claimed integer;
  declare carrier integer;
  declare now_ timestamp;
  declare d_id integer = 1;
  declare o_id integer;
  declare c_id integer;
  declare previous_carrier integer;
  declare amount numeric(12, 2);
begin
  x = tpcc_rand_init(p_seed, 0);
  x = mod(x * 48271, 2147483647);  carrier = 1 + (x - 1) * 10 / 2147483646;  -- 1 .. 10
  now_ = localtimestamp;
  delivered = 0;
  skipped = 0;
  retries = 0;
  repicked = 0;
  while (d_id <= 10) do
  begin
    claimed = 0;
    picks = 0;
    while (claimed = 0 and picks < 10) do
    begin
      o_id = null;
      select first 1 no_o_id from new_order
        where no_w_id = :p_w_id and no_d_id = :d_id
        order by no_o_id
        into :o_id;
      if (o_id is null) then leave;
      picks = picks + 1;
      -- The ORDERS row first: two Deliveries that picked the same order meet here, and the
      -- second waits for the first. Deleting the NEW_ORDER row first would make Firebird 3
      -- report the collision as "cannot update erased record", a generic error.
      tries = 0;
      while (tries < 10) do
      begin
        update orders set o_carrier_id = :carrier
          where o_w_id = :p_w_id and o_d_id = :d_id and o_id = :o_id
          returning o_c_id, old.o_carrier_id into :c_id, :previous_carrier;
        if (row_count > 0) then leave;
        tries = tries + 1;
      end
      if (tries = 10) then
        exception tpcc_missing 'order ' || p_w_id || '/' || d_id || '/' || o_id || ' not found';
      retries = retries + tries;
      delete from new_order where no_w_id = :p_w_id and no_d_id = :d_id and no_o_id = :o_id;
      if (row_count > 0) then
        claimed = 1;
      else
      begin
        -- Another Delivery got there first: its carrier goes back (a handled exception would
        -- not undo the UPDATE), and the next oldest order is picked.
        update orders set o_carrier_id = :previous_carrier
          where o_w_id = :p_w_id and o_d_id = :d_id and o_id = :o_id;
        repicked = repicked + 1;
      end
    end
    if (o_id is null) then
      skipped = skipped + 1;
    else if (claimed = 0) then
      exception tpcc_missing 'district ' || p_w_id || '/' || d_id || ': no undelivered order could be claimed';
    else
    begin
      -- Holding the order, nobody else can be updating its lines.
      update order_line set ol_delivery_d = :now_
        where ol_w_id = :p_w_id and ol_d_id = :d_id and ol_o_id = :o_id;
      select sum(ol_amount) from order_line
        where ol_w_id = :p_w_id and ol_d_id = :d_id and ol_o_id = :o_id
        into :amount;
      tries = 0;
      while (tries < 10) do
      begin
        update customer set c_balance = c_balance + :amount, c_delivery_cnt = c_delivery_cnt + 1
          where c_w_id = :p_w_id and c_d_id = :d_id and c_id = :c_id;
        if (row_count > 0) then leave;
        tries = tries + 1;
      end
      if (tries = 10) then
        exception tpcc_missing 'customer ' || p_w_id || '/' || d_id || '/' || c_id || ' not found';
      retries = retries + tries;
      delivered = delivered + 1;
    end
    d_id = d_id + 1;
  end
end^

/*
 * Stock-Level (clause 2.8), read-only: how many distinct items of the district's last 20
 * orders have less than p_threshold (10 .. 20, from the client) in stock.
 */
create procedure tpcc_stock_level (p_w_id integer, p_d_id integer, p_threshold integer)
returns (low_stock integer)
as
  declare next_o_id integer;
begin
  select d_next_o_id from district where d_w_id = :p_w_id and d_id = :p_d_id into :next_o_id;
  select count(distinct s.s_i_id)
    from order_line ol
    join stock s on s.s_w_id = :p_w_id and s.s_i_id = ol.ol_i_id
    where ol.ol_w_id = :p_w_id and ol.ol_d_id = :p_d_id
      and ol.ol_o_id >= :next_o_id - 20 and ol.ol_o_id < :next_o_id
      and s.s_quantity < :p_threshold
    into :low_stock;
end^

set term ; ^

/*
 * TPC-C-derived workload: population inside the engine (clause 4.3.3.1).
 *
 * One procedure per load step; workload.toml calls them per warehouse or per (warehouse,
 * district) / (warehouse, part), so fbbench spreads the calls over several attachments. Each
 * call inserts only rows keyed by its own warehouse (and district or item range) and reads only
 * TPCC_NURAND, so parallel calls never wait for each other's row locks. Each call is one
 * transaction of plain INSERTs inside a PSQL loop: no EXECUTE STATEMENT, no index maintenance
 * (the indices are built afterwards by indexes.sql).
 *
 * Random numbers: see random.sql (x = next state; lo + (x - 1) * n / 2147483646 picks one of n
 * values). Every call seeds its generator from its seed and its warehouse / district / part
 * number, so the same scale and seeds build the same database (timestamps aside).
 *
 * Jumping ahead: the k-th state after x is mod(x * A_k, 2147483647) with A_k = 48271^k mod
 * 2147483647 (x and A_k are below 2^31, so the product fits a BIGINT). The loops of ITEM, STOCK,
 * CUSTOMER/HISTORY and ORDER_LINE take each row's draws that way — most of them inside the row's
 * INSERT — and then move x past the row in one step, instead of one PSQL statement per draw:
 * the same numbers in the same order as drawing them one at a time, for a third of the
 * statements. The constants used: A_2 = 182605794, A_3 = 1291394886, A_4 = 1914720637,
 * A_5 = 2078669041, A_6 = 407355683, A_7 = 1105902161, A_8 = 854716505, A_9 = 564586691,
 * A_10 = 1596680831, A_11 = 192302371, A_12 = 1203428207, A_13 = 1250328747,
 * A_14 = 1738531149, A_15 = 1271135913, A_16 = 1098894339, A_17 = 1882556969,
 * A_18 = 2136927794.
 *
 * Windows: a STOCK row's eleven random a-strings and a customer's seven are cut from one window
 * of the pool at one drawn offset, each string at a fixed place in it (as long as its longest),
 * instead of each at an offset of its own: a STOCK row draws 4 numbers instead of 14, a customer
 * 12 instead of 18 (NURand's aside), 4.7 million of the 12.6 million draws at 4 warehouses. In
 * PSQL loops on Firebird 5.0 (2-core VM) a string cut at a drawn offset took 0.8 us, one cut at a
 * fixed place in a window 0.3 us: at STOCK's eleven strings, about what inserting the row costs
 * the engine. benchmarks/population_speed.py measures the population against the engine's
 * plain-insert ceiling.
 *
 * Scale: ${items} items, ${customers} customers and ${orders} orders per district. The
 * specification's values are 100000, 3000 and 3000; other values are for quick tests only.
 * The last 30 % of the orders of each district (900 of 3000) are undelivered, in NEW_ORDER.
 *
 * Random a-strings are cut from a pool of random characters (see tpcc_alnum_pool): 2048
 * characters long, so a string of length len starts at one of 2049 - len offsets (a window of
 * w characters at one of 2049 - w).
 */

set term ^ ;

-- C-Load for NURand(255, ..) of C_LAST (clause 2.1.6), stored for the run to choose C-Run.
create procedure tpcc_load_init (p_seed bigint)
as
  declare x bigint;
begin
  x = tpcc_rand_init(p_seed, 0);
  x = mod(x * 48271, 2147483647);
  update or insert into tpcc_nurand (nurand_a, c_load)
    values (255, (:x - 1) * 256 / 2147483646)
    matching (nurand_a);
end^

-- The run's NURand constant C for A (clause 2.1.6), from the run's seed: for A = 255 (C_LAST)
-- C-Run differs from the population's C-Load by 65 .. 119, but not by 96 or 112 (2.1.6.1); for
-- any other A, C is uniform in 0 .. A. fbbench reads it before measuring ([constants]).
create procedure tpcc_c_run (p_a integer, p_seed bigint)
returns (c integer)
as
  declare x bigint;
  declare v_load integer;
  declare delta integer;
begin
  x = tpcc_rand_init(p_seed, 2000000000 + p_a);
  if (p_a = 255) then
    select c_load from tpcc_nurand where nurand_a = 255 into :v_load;
  while (1 = 1) do
  begin
    x = mod(x * 48271, 2147483647);
    c = (x - 1) * (p_a + 1) / 2147483646;
    if (v_load is null) then leave;
    delta = abs(c - v_load);
    if (delta between 65 and 119 and delta not in (96, 112)) then leave;
  end
  suspend;
end^

-- ITEM, one tenth of the ids per call (p_part = 1 .. 10). A row's draws, in order: I_IM_ID, the
-- length and the offset of I_NAME, I_PRICE, the length and the offset of I_DATA, whether it is
-- "ORIGINAL" (10 %) and, only then, where.
create procedure tpcc_load_items (p_part integer, p_seed bigint)
as
  declare i_id integer;
  declare last_id integer;
  declare x bigint;
  declare y bigint;
  declare pool varchar(2048) character set ascii;
  declare name_len integer;
  declare len integer;
  declare i_data varchar(50) character set ascii;
begin
  i_id = (p_part - 1) * ${items} / 10 + 1;
  last_id = p_part * ${items} / 10;
  pool = tpcc_alnum_pool(tpcc_rand_init(p_seed, 1000000000 + p_part));
  x = tpcc_rand_init(p_seed, p_part);
  while (i_id <= last_id) do
  begin
    name_len = 14 + (mod(x * 182605794, 2147483647) - 1) * 11 / 2147483646;                      -- 14 .. 24
    len = 26 + (mod(x * 2078669041, 2147483647) - 1) * 25 / 2147483646;                           -- 26 .. 50
    i_data = substring(pool from 1 + (mod(x * 407355683, 2147483647) - 1) * (2049 - len) / 2147483646 for len);
    y = mod(x * 1105902161, 2147483647);
    if ((y - 1) * 10 / 2147483646 = 0) then  -- 10 % of the items: "ORIGINAL" at a random position
    begin
      y = mod(y * 48271, 2147483647);
      i_data = overlay(i_data placing 'ORIGINAL' from 1 + (y - 1) * (len - 7) / 2147483646);
    end
    insert into item (i_id, i_im_id, i_name, i_price, i_data)
      values (:i_id,
              1 + (mod(:x * 48271, 2147483647) - 1) * 10000 / 2147483646,
              substring(:pool from 1 + (mod(:x * 1291394886, 2147483647) - 1) * (2049 - :name_len) / 2147483646 for :name_len),
              (100 + (mod(:x * 1914720637, 2147483647) - 1) * 9901 / 2147483646) * 0.01,        -- 1.00 .. 100.00
              :i_data);
    x = y;
    i_id = i_id + 1;
  end
end^

-- One WAREHOUSE row and its 10 DISTRICT rows. W_YTD and D_YTD equal the sum of the initial
-- HISTORY amounts (10.00 per customer): 300000.00 and 30000.00 at the specification's scale.
create procedure tpcc_load_warehouse (p_w_id integer, p_seed bigint)
as
  declare x bigint;
  declare pool varchar(2048) character set ascii;
  declare d_id integer = 0;
  declare len integer;
  declare name_ varchar(10) character set ascii;
  declare street_1 varchar(20) character set ascii;
  declare street_2 varchar(20) character set ascii;
  declare city varchar(20) character set ascii;
  declare state char(2) character set ascii;
  declare zip char(9) character set ascii;
  declare tax numeric(4, 4);
begin
  pool = tpcc_alnum_pool(tpcc_rand_init(p_seed, 1000000000 + p_w_id));
  x = tpcc_rand_init(p_seed, p_w_id);
  -- d_id = 0 is the warehouse itself, 1 .. 10 its districts: the same address columns.
  while (d_id <= 10) do
  begin
    x = mod(x * 48271, 2147483647);  len = 6 + (x - 1) * 5 / 2147483646;            -- 6 .. 10
    x = mod(x * 48271, 2147483647);  name_ = substring(pool from 1 + (x - 1) * (2049 - len) / 2147483646 for len);
    x = mod(x * 48271, 2147483647);  len = 10 + (x - 1) * 11 / 2147483646;          -- 10 .. 20
    x = mod(x * 48271, 2147483647);  street_1 = substring(pool from 1 + (x - 1) * (2049 - len) / 2147483646 for len);
    x = mod(x * 48271, 2147483647);  len = 10 + (x - 1) * 11 / 2147483646;
    x = mod(x * 48271, 2147483647);  street_2 = substring(pool from 1 + (x - 1) * (2049 - len) / 2147483646 for len);
    x = mod(x * 48271, 2147483647);  len = 10 + (x - 1) * 11 / 2147483646;
    x = mod(x * 48271, 2147483647);  city = substring(pool from 1 + (x - 1) * (2049 - len) / 2147483646 for len);
    x = mod(x * 48271, 2147483647);  state = substring(pool from 1 + (x - 1) * 2047 / 2147483646 for 2);
    x = mod(x * 48271, 2147483647);  zip = lpad(cast((x - 1) * 10000 / 2147483646 as varchar(4)), 4, '0') || '11111';
    x = mod(x * 48271, 2147483647);  tax = ((x - 1) * 2001 / 2147483646) * 0.0001;  -- 0.0000 .. 0.2000
    if (d_id = 0) then
      insert into warehouse (w_id, w_name, w_street_1, w_street_2, w_city, w_state, w_zip, w_tax, w_ytd)
        values (:p_w_id, :name_, :street_1, :street_2, :city, :state, :zip, :tax, 10 * ${customers} * 10.00);
    else
      insert into district (d_id, d_w_id, d_name, d_street_1, d_street_2, d_city, d_state, d_zip, d_tax, d_ytd,
                            d_next_o_id)
        values (:d_id, :p_w_id, :name_, :street_1, :street_2, :city, :state, :zip, :tax, ${customers} * 10.00,
                ${orders} + 1);
    d_id = d_id + 1;
  end
end^

-- STOCK of one warehouse, one tenth of the items per call (p_part = 1 .. 10). A row's draws, in
-- order: S_QUANTITY, the offset of its window of the pool (1 .. 1759: 290 characters), the length
-- of S_DATA, whether it is "ORIGINAL" (10 %) and, only then, where. The window holds S_DIST_01 ..
-- S_DIST_10 (random a-strings of exactly 24 characters), one after the other, then S_DATA.
create procedure tpcc_load_stock (p_w_id integer, p_part integer, p_seed bigint)
as
  declare i_id integer;
  declare last_id integer;
  declare x bigint;
  declare y bigint;
  declare pool varchar(2048) character set ascii;
  declare at_ integer;
  declare len integer;
  declare s_data varchar(50) character set ascii;
begin
  i_id = (p_part - 1) * ${items} / 10 + 1;
  last_id = p_part * ${items} / 10;
  pool = tpcc_alnum_pool(tpcc_rand_init(p_seed, 1000000000 + p_w_id * 100 + p_part));
  x = tpcc_rand_init(p_seed, p_w_id * 100 + p_part);
  while (i_id <= last_id) do
  begin
    at_ = 1 + (mod(x * 182605794, 2147483647) - 1) * 1759 / 2147483646;                          -- 1 .. 1759
    len = 26 + (mod(x * 1291394886, 2147483647) - 1) * 25 / 2147483646;                          -- 26 .. 50
    s_data = substring(pool from at_ + 240 for len);
    y = mod(x * 1914720637, 2147483647);
    if ((y - 1) * 10 / 2147483646 = 0) then  -- 10 % of the stock: "ORIGINAL" at a random position
    begin
      y = mod(y * 48271, 2147483647);
      s_data = overlay(s_data placing 'ORIGINAL' from 1 + (y - 1) * (len - 7) / 2147483646);
    end
    insert into stock (s_i_id, s_w_id, s_quantity, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05,
                       s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10, s_ytd, s_order_cnt, s_remote_cnt,
                       s_data)
      values (:i_id, :p_w_id,
              10 + (mod(:x * 48271, 2147483647) - 1) * 91 / 2147483646,                     -- 10 .. 100
              substring(:pool from :at_ for 24), substring(:pool from :at_ + 24 for 24),
              substring(:pool from :at_ + 48 for 24), substring(:pool from :at_ + 72 for 24),
              substring(:pool from :at_ + 96 for 24), substring(:pool from :at_ + 120 for 24),
              substring(:pool from :at_ + 144 for 24), substring(:pool from :at_ + 168 for 24),
              substring(:pool from :at_ + 192 for 24), substring(:pool from :at_ + 216 for 24),
              0, 0, 0, :s_data);
    x = y;
    i_id = i_id + 1;
  end
end^

/*
 * CUSTOMER and HISTORY of one district. C_LAST: the first 1000 customers take the names of
 * 0 .. 999 in order, so every name exists; the others NURand(255, 0, 999) with C-Load
 * (clause 4.3.2.3). 10 % have bad credit (C_CREDIT = 'BC'). A customer's draws, in order: the
 * two of NURand (only past the first 1000), then the lengths of C_FIRST, C_STREET_1, C_STREET_2
 * and C_CITY, the offset of its window of the pool (1 .. 1447: 602 characters), C_ZIP, the two
 * halves of C_PHONE, C_CREDIT, C_DISCOUNT, and the lengths of C_DATA and H_DATA. The window holds,
 * each at the start of a place as long as its longest: C_FIRST (16), C_STREET_1 (20), C_STREET_2
 * (20), C_CITY (20), C_STATE (2), C_DATA (500), H_DATA (24).
 */
create procedure tpcc_load_customers (p_w_id integer, p_d_id integer, p_seed bigint)
as
  declare c_id integer = 1;
  declare x bigint;
  declare pool varchar(2048) character set ascii;
  declare c_load integer;
  declare now_ timestamp;
  declare name_number integer;
  declare first_len integer;
  declare street_1_len integer;
  declare street_2_len integer;
  declare city_len integer;
  declare at_ integer;
  declare data_len integer;
  declare h_data_len integer;
begin
  select c_load from tpcc_nurand where nurand_a = 255 into :c_load;
  if (c_load is null) then
    exception tpcc_missing 'TPCC_NURAND has no C-Load: run tpcc_load_init first';
  now_ = localtimestamp;
  pool = tpcc_alnum_pool(tpcc_rand_init(p_seed, 1000000000 + p_w_id * 100 + p_d_id));
  x = tpcc_rand_init(p_seed, p_w_id * 100 + p_d_id);
  while (c_id <= ${customers}) do
  begin
    if (c_id <= 1000) then
      name_number = c_id - 1;
    else
    begin  -- NURand(255, 0, 999) = ((random(0, 255) | random(0, 999)) + C) mod 1000
      name_number = mod(bin_or((mod(x * 48271, 2147483647) - 1) * 256 / 2147483646, (mod(x * 182605794, 2147483647) - 1) * 1000 / 2147483646) + c_load, 1000);
      x = mod(x * 182605794, 2147483647);
    end
    first_len = 8 + (mod(x * 48271, 2147483647) - 1) * 9 / 2147483646;                            -- 8 .. 16
    street_1_len = 10 + (mod(x * 182605794, 2147483647) - 1) * 11 / 2147483646;                   -- 10 .. 20
    street_2_len = 10 + (mod(x * 1291394886, 2147483647) - 1) * 11 / 2147483646;
    city_len = 10 + (mod(x * 1914720637, 2147483647) - 1) * 11 / 2147483646;
    at_ = 1 + (mod(x * 2078669041, 2147483647) - 1) * 1447 / 2147483646;                           -- 1 .. 1447
    data_len = 300 + (mod(x * 192302371, 2147483647) - 1) * 201 / 2147483646;                     -- 300 .. 500
    h_data_len = 12 + (mod(x * 1203428207, 2147483647) - 1) * 13 / 2147483646;                    -- 12 .. 24
    insert into customer (c_id, c_d_id, c_w_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city,
                          c_state, c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance,
                          c_ytd_payment, c_payment_cnt, c_delivery_cnt, c_data)
      values (:c_id, :p_d_id, :p_w_id,
              substring(:pool from :at_ for :first_len),
              'OE', tpcc_last_name(:name_number),
              substring(:pool from :at_ + 16 for :street_1_len),
              substring(:pool from :at_ + 36 for :street_2_len),
              substring(:pool from :at_ + 56 for :city_len),
              substring(:pool from :at_ + 76 for 2),
              lpad(cast((mod(:x * 407355683, 2147483647) - 1) * 10000 / 2147483646 as varchar(4)), 4, '0') || '11111',
              lpad(cast((mod(:x * 1105902161, 2147483647) - 1) * 100000000 / 2147483646 as varchar(8)), 8, '0')
                || lpad(cast((mod(:x * 854716505, 2147483647) - 1) * 100000000 / 2147483646 as varchar(8)), 8, '0'),
              :now_,
              iif((mod(:x * 564586691, 2147483647) - 1) * 10 / 2147483646 = 0, 'BC', 'GC'),
              50000.00,
              ((mod(:x * 1596680831, 2147483647) - 1) * 5001 / 2147483646) * 0.0001,           -- 0.0000 .. 0.5000
              -10.00, 10.00, 1, 0,
              substring(:pool from :at_ + 78 for :data_len));
    insert into history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
      values (:c_id, :p_d_id, :p_w_id, :p_d_id, :p_w_id, :now_, 10.00, substring(:pool from :at_ + 578 for :h_data_len));
    x = mod(x * 1203428207, 2147483647);
    c_id = c_id + 1;
  end
end^

/*
 * ORDERS, ORDER_LINE and NEW_ORDER of one district. O_C_ID runs through a random permutation
 * of the customer ids (repeated if there are more orders than customers). The first 70 % of
 * the orders are delivered (carrier, delivery date, OL_AMOUNT 0.00); the last 30 % are not and
 * have a row in NEW_ORDER.
 */
create procedure tpcc_load_orders (p_w_id integer, p_d_id integer, p_seed bigint)
as
  declare x bigint;
  declare pool varchar(2048) character set ascii;
  declare now_ timestamp;
  declare c_id integer = 1;
  declare o_id integer = 1;
  declare first_new integer;
  declare ol_cnt integer;
  declare ol_number integer;
  declare carrier integer;
  declare delivery_d timestamp;
begin
  now_ = localtimestamp;
  first_new = ${orders} - ${orders} * 3 / 10 + 1;  -- 2101 of 3000
  pool = tpcc_alnum_pool(tpcc_rand_init(p_seed, 1000000000 + p_w_id * 100 + p_d_id));
  x = tpcc_rand_init(p_seed, p_w_id * 100 + p_d_id);
  -- A random permutation: the customer ids sorted by distinct random keys (the generator
  -- never repeats a state within its period).
  while (c_id <= ${customers}) do
  begin
    x = mod(x * 48271, 2147483647);
    insert into tpcc_load_permutation (sort_key, c_id) values (:x, :c_id);
    c_id = c_id + 1;
  end
  while (o_id <= ${orders}) do
    for select c_id from tpcc_load_permutation order by sort_key into :c_id do
    begin
      if (o_id > ${orders}) then
        leave;
      x = mod(x * 48271, 2147483647);  ol_cnt = 5 + (x - 1) * 11 / 2147483646;      -- 5 .. 15
      if (o_id < first_new) then
      begin
        x = mod(x * 48271, 2147483647);  carrier = 1 + (x - 1) * 10 / 2147483646;  -- 1 .. 10
        delivery_d = now_;
      end
      else
      begin
        carrier = null;
        delivery_d = null;
      end
      insert into orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
        values (:o_id, :p_d_id, :p_w_id, :c_id, :now_, :carrier, :ol_cnt, 1);
      -- A line's draws, in order: OL_I_ID, OL_AMOUNT (0.00 if delivered, else 0.01 .. 9999.99,
      -- drawn either way), the offset of OL_DIST_INFO.
      ol_number = 1;
      while (ol_number <= ol_cnt) do
      begin
        insert into order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
                                ol_quantity, ol_amount, ol_dist_info)
          values (:o_id, :p_d_id, :p_w_id, :ol_number,
                  1 + (mod(:x * 48271, 2147483647) - 1) * ${items} / 2147483646,
                  :p_w_id, :delivery_d, 5,
                  iif(:carrier is null, (1 + (mod(:x * 182605794, 2147483647) - 1) * 999999 / 2147483646) * 0.01, 0.00),
                  substring(:pool from 1 + (mod(:x * 1291394886, 2147483647) - 1) * 2025 / 2147483646 for 24));
        x = mod(x * 1291394886, 2147483647);
        ol_number = ol_number + 1;
      end
      if (carrier is null) then
        insert into new_order (no_o_id, no_d_id, no_w_id) values (:o_id, :p_d_id, :p_w_id);
      o_id = o_id + 1;
    end
end^

set term ; ^

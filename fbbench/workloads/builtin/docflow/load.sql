/*
 * docflow: population, inside the engine.
 *
 * The reference data (wares with prices, agents, one balance row per ware and per agent), then
 * per worker an initial flow of documents made by the business procedures themselves, so that
 * every unit finds documents of its kind from the first second of a run; then one run of each
 * service unit, so a run starts from aggregated balances.
 *
 * Every call seeds its generator from its own seed (fbbench derives it from the workload, the
 * step and the worker only): the same scale always builds the same database.
 */

set term ^ ;

-- Wares: purchase price 1000 .. 2000 in steps of 100, retail price 1.35 .. 1.80 times that, in
-- groups of about 20. Agents: 1 is our firm, then 93 % customers, the rest suppliers.
create procedure docflow_load_reference (p_seed bigint)
as
  declare x bigint;
  declare wares_count integer;
  declare agents_count integer;
  declare customers integer;
  declare groups_count integer;
  declare i integer;
  declare price numeric(18, 2);
  declare retail numeric(18, 2);
  declare group_id integer;
begin
  select m.wares, m.agents, m.agents * 93 / 100 from working_modes m where m.mode_name = '${mode}'
    into :wares_count, :agents_count, :customers;
  groups_count = maxvalue(1, wares_count / 20);
  i = 1;
  while (i <= groups_count) do
  begin
    insert into ware_groups (id, name) values (:i, 'group ' || :i);
    i = i + 1;
  end
  x = docflow_rand_init(p_seed, 1);
  i = 1;
  while (i <= wares_count) do
  begin
    x = mod(x * 48271, 2147483647);  price = 1000 + 100 * ((x - 1) * 11 / 2147483646);
    x = mod(x * 48271, 2147483647);  retail = price * (135 + (x - 1) * 46 / 2147483646) / 100;
    x = mod(x * 48271, 2147483647);  group_id = 1 + (x - 1) * groups_count / 2147483646;
    insert into wares (id, group_id, name, price_purchase, price_retail)
      values (:i, :group_id, 'ware ' || lpad(cast(:i as varchar(10)), 5, '0'), :price, :retail);
    insert into invnt_saldo (ware_id) values (:i);
    i = i + 1;
  end
  insert into agents (id, name, is_our_firm) values (1, 'our firm', 1);
  i = 2;
  while (i <= agents_count) do
  begin
    insert into agents (id, name, is_customer, is_supplier)
      values (:i, iif(:i <= :customers + 1, 'customer ', 'supplier ') || :i,
              iif(:i <= :customers + 1, 1, 0), iif(:i <= :customers + 1, 0, 1));
    i = i + 1;
  end
  insert into money_saldo (agent_id) select id from agents;
end^

-- P_ROUNDS rounds of the document chain for one worker: three client orders, then, each with
-- a chance of 3 in 4, a supplier order, a supplier invoice, an acceptance into stock (with the
-- reserves it makes), a write-off and a payment each way. The skipped steps leave documents in
-- every state behind, so every unit of a run finds work from its first second.
create procedure docflow_load_stream (p_worker integer, p_rounds integer, p_seed bigint)
as
  declare x bigint;
  declare round_no integer = 0;
  declare i integer;
  declare doc bigint;
  declare lines integer;
  declare units integer;
  declare reserves integer;
begin
  x = docflow_rand_init(p_seed, p_worker);
  while (round_no < p_rounds) do
  begin
    i = 0;
    while (i < 3) do
    begin
      x = mod(x * 48271, 2147483647);
      execute procedure docflow_client_order (p_worker, x) returning_values :doc, :lines, :units;
      i = i + 1;
    end
    x = mod(x * 48271, 2147483647);
    if ((x - 1) * 4 / 2147483646 < 3) then
    begin
      x = mod(x * 48271, 2147483647);
      execute procedure docflow_supplier_order (p_worker, x) returning_values :doc, :lines, :units;
      when exception docflow_nothing_to_do do doc = null;
    end
    x = mod(x * 48271, 2147483647);
    if ((x - 1) * 4 / 2147483646 < 3) then
    begin
      x = mod(x * 48271, 2147483647);
      execute procedure docflow_supplier_invoice (p_worker, x) returning_values :doc, :lines, :units;
      when exception docflow_nothing_to_do do doc = null;
    end
    x = mod(x * 48271, 2147483647);
    if ((x - 1) * 4 / 2147483646 < 3) then
    begin
      x = mod(x * 48271, 2147483647);
      execute procedure docflow_add_invoice_to_stock (p_worker, x) returning_values :doc, :lines, :units, :reserves;
      when exception docflow_nothing_to_do do doc = null;
    end
    x = mod(x * 48271, 2147483647);
    if ((x - 1) * 4 / 2147483646 < 3) then
    begin
      x = mod(x * 48271, 2147483647);
      execute procedure docflow_reserve_write_off (p_worker, x) returning_values :doc, :lines, :units;
      when exception docflow_nothing_to_do do doc = null;
    end
    x = mod(x * 48271, 2147483647);
    if ((x - 1) * 4 / 2147483646 < 3) then
    begin
      x = mod(x * 48271, 2147483647);
      execute procedure docflow_pay_from_customer (p_worker, x) returning_values :doc, :lines;
      when exception docflow_nothing_to_do do doc = null;
    end
    x = mod(x * 48271, 2147483647);
    if ((x - 1) * 4 / 2147483646 < 3) then
    begin
      x = mod(x * 48271, 2147483647);
      execute procedure docflow_pay_to_supplier (p_worker, x) returning_values :doc, :lines;
      when exception docflow_nothing_to_do do doc = null;
    end
    round_no = round_no + 1;
  end
end^

set term ; ^

/*
 * docflow: the business units and their helpers (README.md describes the model).
 *
 * Every unit takes the attachment's worker number (its stream of documents) and a seed, and
 * draws every random choice from that seed with a Lehmer generator:
 *
 *     x = mod(x * 48271, 2147483647);          -- next state, 1 .. 2147483646
 *     v = lo + (x - 1) * n / 2147483646;       -- one of n values from lo
 *
 * never with RAND(): under read consistency (Firebird 4+) a statement that meets a row a
 * concurrent transaction changed is undone and restarted, and a restart must make the same
 * choices again (the same customer, wares, quantities and the same candidate documents) or it
 * would touch other rows and could keep restarting.
 *
 * Row locks: a document is changed only after its header row has been updated with its
 * expected type and state in the WHERE clause. That update is the lock: a concurrent unit that
 * wants the same document waits for it, and finds it changed (0 rows: the next candidate is
 * tried, or under read consistency the statement restarts and picks again). FIFO rows are taken
 * one by one, oldest first, and a row someone else took in between is simply skipped.
 */

set term ^ ;

-- The generator's first state for a seed and a stream (each unit and step draws from its own
-- stream, so two procedures given the same seed make unrelated choices).
create function docflow_rand_init (p_seed bigint, p_stream integer)
returns bigint
as
  declare x bigint;
  declare i integer = 0;
begin
  x = mod(abs(mod(p_seed, 2147483646)) + p_stream * 7919, 2147483646) + 1;
  while (i < 3) do
  begin
    x = mod(x * 48271, 2147483647);
    i = i + 1;
  end
  return x;
end^

-- ---------------------------------------------------------------------------------- FIFO rows

-- P_QTY free rows of a ware, produced by line P_LINE for the step P_SND -> P_RCV. One sequence
-- call reserves the ids of the whole line, so its rows are consecutive in FIFO order.
create procedure docflow_put_rows (p_worker integer, p_ware integer, p_snd smallint, p_rcv smallint,
                                   p_line bigint, p_qty integer)
as
  declare row_id bigint;
  declare last_id bigint;
begin
  last_id = gen_id(fifo_seq, p_qty);
  row_id = last_id - p_qty + 1;
  while (row_id <= last_id) do
  begin
    insert into qdistr (id, worker_id, ware_id, snd_optype_id, rcv_optype_id, snd_id)
      values (:row_id, :p_worker, :p_ware, :p_snd, :p_rcv, :p_line);
    row_id = row_id + 1;
  end
end^

-- Firebird 3 reports a row that a concurrent transaction deleted and committed while this
-- statement ran as 'cannot update erased record' (isc_random, 335544382) rather than as an
-- update conflict; Firebird 4+ restarts the statement instead.
-- Takes up to P_NEED of the oldest free rows of a ware for the step P_SND -> P_RCV for line
-- P_RCV_LINE. A row a concurrent document took after it was read is skipped.
create procedure docflow_take_rows (p_worker integer, p_ware integer, p_snd smallint, p_rcv smallint,
                                    p_rcv_line bigint, p_need integer)
returns (taken integer)
as
  declare row_id bigint;
  declare snd_line bigint;
  declare deleted integer;
begin
  taken = 0;
  for select q.id, q.snd_id from qdistr q
      where q.worker_id = :p_worker and q.snd_optype_id = :p_snd and q.rcv_optype_id = :p_rcv
        and q.ware_id = :p_ware
      order by q.worker_id, q.snd_optype_id, q.rcv_optype_id, q.ware_id, q.id
      rows :p_need
      into :row_id, :snd_line
  do
  begin
    begin
      delete from qdistr where id = :row_id;
      deleted = row_count;
      when any do
      begin
        if (gdscode <> 335544382) then
          exception;
        deleted = 0;
      end
    end
    if (deleted = 1) then
    begin
      insert into qstorned (id, worker_id, ware_id, snd_optype_id, rcv_optype_id, snd_id, rcv_id)
        values (:row_id, :p_worker, :p_ware, :p_snd, :p_rcv, :snd_line, :p_rcv_line);
      taken = taken + 1;
    end
  end
end^

-- Takes up to P_NEED free rows that one line produced (a reserve taking a client order line's
-- demand).
create procedure docflow_take_line_rows (p_snd_line bigint, p_snd smallint, p_rcv smallint, p_rcv_line bigint,
                                         p_need integer)
returns (taken integer)
as
  declare row_id bigint;
  declare worker integer;
  declare ware integer;
  declare deleted integer;
begin
  taken = 0;
  for select q.id, q.worker_id, q.ware_id from qdistr q
      where q.snd_id = :p_snd_line and q.snd_optype_id = :p_snd and q.rcv_optype_id = :p_rcv
      order by q.id
      rows :p_need
      into :row_id, :worker, :ware
  do
  begin
    begin
      delete from qdistr where id = :row_id;
      deleted = row_count;
      when any do
      begin
        if (gdscode <> 335544382) then
          exception;
        deleted = 0;
      end
    end
    if (deleted = 1) then
    begin
      insert into qstorned (id, worker_id, ware_id, snd_optype_id, rcv_optype_id, snd_id, rcv_id)
        values (:row_id, :worker, :ware, :p_snd, :p_rcv, :p_snd_line, :p_rcv_line);
      taken = taken + 1;
    end
  end
end^

-- A cancelled line gives back every row it took, with its id: the row is free again at the
-- place in the FIFO order it had.
create procedure docflow_give_back (p_rcv_line bigint)
returns (given integer)
as
  declare row_id bigint;
  declare worker integer;
  declare ware integer;
  declare snd smallint;
  declare rcv smallint;
  declare snd_line bigint;
begin
  given = 0;
  for select s.id, s.worker_id, s.ware_id, s.snd_optype_id, s.rcv_optype_id, s.snd_id from qstorned s
      where s.rcv_id = :p_rcv_line
      into :row_id, :worker, :ware, :snd, :rcv, :snd_line
  do
  begin
    delete from qstorned where id = :row_id;
    if (row_count = 1) then
    begin
      insert into qdistr (id, worker_id, ware_id, snd_optype_id, rcv_optype_id, snd_id)
        values (:row_id, :worker, :ware, :snd, :rcv, :snd_line);
      given = given + 1;
    end
  end
end^

-- A cancelled line withdraws the rows it produced; all of them must still be free, or a later
-- document took some and this one cannot be cancelled.
create procedure docflow_drop_rows (p_snd_line bigint, p_expected integer)
as
begin
  begin
    delete from qdistr where snd_id = :p_snd_line;
    if (row_count <> p_expected) then
      exception docflow_not_eligible;
    when any do
    begin
      if (gdscode = 335544382) then  -- Firebird 3: a concurrent document took one of the rows
        exception docflow_not_eligible;
      exception;
    end
  end
end^

-- ---------------------------------------------------------------------------------- money rows

-- A document owes P_COST in money rows; 1000 or more is split into 10 rows (OLTP-EMUL's
-- granularity), the last one taking the rounding remainder.
create procedure docflow_owe (p_worker integer, p_agent integer, p_snd smallint, p_rcv smallint, p_doc bigint,
                              p_cost numeric(18, 2))
as
  declare parts integer;
  declare part numeric(18, 2);
  declare i integer = 1;
begin
  parts = iif(p_cost >= 1000, 10, 1);
  part = cast(p_cost / parts as numeric(18, 2));
  while (i <= parts) do
  begin
    insert into pdistr (id, worker_id, agent_id, snd_optype_id, rcv_optype_id, snd_id, cost)
      values (next value for money_seq, :p_worker, :p_agent, :p_snd, :p_rcv, :p_doc,
              iif(:i = :parts, :p_cost - :part * (:parts - 1), :part));
    i = i + 1;
  end
end^

-- ---------------------------------------------------------------------------------- logs

-- The stock turnover of every line of a document for one step (P_SIGN -1: a cancellation).
create procedure docflow_log_lines (p_doc bigint, p_optype smallint, p_sign smallint)
as
begin
  insert into invnt_turnover_log (id, ware_id, doc_id, line_id, optype_id, qty_diff, cost_diff)
    select next value for log_seq, l.ware_id, l.doc_id, l.id, :p_optype, :p_sign * l.qty, :p_sign * l.cost_purchase
    from doc_data l where l.doc_id = :p_doc;
end^

create procedure docflow_log_money (p_doc bigint, p_agent integer, p_optype smallint, p_cost numeric(18, 2))
as
begin
  insert into money_turnover_log (id, agent_id, doc_id, optype_id, cost_diff)
    values (next value for log_seq, :p_agent, :p_doc, :p_optype, :p_cost);
end^

-- Header totals from the lines.
create procedure docflow_total (p_doc bigint)
as
begin
  update doc_list
    set cost_purchase = (select coalesce(sum(l.cost_purchase), 0) from doc_data l where l.doc_id = :p_doc),
        cost_retail = (select coalesce(sum(l.cost_retail), 0) from doc_data l where l.doc_id = :p_doc)
    where id = :p_doc;
end^

-- ---------------------------------------------------------------------------------- picking

-- Up to P_MAX documents of the worker of one type and state, from a random id on (P_X, a
-- generator state) and then from the first one: a random pick that needs no count, and the
-- next candidates in a fixed order when the first one cannot be used.
create procedure docflow_candidates (p_worker integer, p_optype smallint, p_state smallint, p_x bigint,
                                     p_max integer)
returns (doc bigint)
as
  declare start_id bigint;
  declare found integer = 0;
begin
  start_id = 1 + (p_x - 1) * gen_id(doc_seq, 0) / 2147483646;
  for select d.id from doc_list d
      where d.worker_id = :p_worker and d.optype_id = :p_optype and d.state_id = :p_state and d.id >= :start_id
      order by d.worker_id, d.optype_id, d.state_id, d.id
      rows :p_max
      into :doc
  do
  begin
    found = found + 1;
    suspend;
  end
  if (found < p_max) then
    for select d.id from doc_list d
        where d.worker_id = :p_worker and d.optype_id = :p_optype and d.state_id = :p_state and d.id < :start_id
        order by d.worker_id, d.optype_id, d.state_id, d.id
        rows :p_max - :found
        into :doc
    do
      suspend;
end^

-- Takes the header of a candidate: moves it from one (type, state) to another, or reports that
-- it is no longer in the expected one (a concurrent unit got there first).
create procedure docflow_claim (p_doc bigint, p_optype smallint, p_state smallint, p_new_optype smallint,
                                p_new_state smallint)
returns (claimed smallint)
as
begin
  update doc_list set optype_id = :p_new_optype, state_id = :p_new_state
    where id = :p_doc and optype_id = :p_optype and state_id = :p_state;
  claimed = row_count;
end^

-- A new document whose lines take free rows of one step (P_SND -> P_RCV): from a random ware
-- on, the wares that have free rows, up to 1 .. P_MAX_ROWS lines of 1 .. P_MAX_QTY each (less
-- where fewer rows are free). Each line produces as many rows for the step after (P_NEXT_RCV),
-- unless that is 0. DOC is null when no row was free.
create procedure docflow_doc_from_rows (p_worker integer, p_x bigint, p_optype smallint, p_agent integer,
                                        p_snd smallint, p_rcv smallint, p_next_rcv smallint,
                                        p_max_rows integer, p_max_qty integer, p_wares integer)
returns (doc bigint, lines integer, units integer)
as
  declare x bigint;
  declare wanted integer;
  declare start_ware integer;
  declare next_ware integer;
  declare wrapped smallint = 0;
  declare ware integer;
  declare want integer;
  declare line bigint;
  declare taken integer;
begin
  x = p_x;
  x = mod(x * 48271, 2147483647);  wanted = 1 + (x - 1) * p_max_rows / 2147483646;
  x = mod(x * 48271, 2147483647);  start_ware = 1 + (x - 1) * p_wares / 2147483646;
  next_ware = start_ware;
  lines = 0;
  units = 0;
  while (lines < wanted) do
  begin
    ware = null;
    select first 1 q.ware_id from qdistr q
      where q.worker_id = :p_worker and q.snd_optype_id = :p_snd and q.rcv_optype_id = :p_rcv
        and q.ware_id >= :next_ware
      order by q.worker_id, q.snd_optype_id, q.rcv_optype_id, q.ware_id, q.id
      into :ware;
    if (ware is null or (wrapped = 1 and ware >= start_ware)) then
    begin
      if (wrapped = 1 or start_ware = 1) then
        leave;
      wrapped = 1;
      next_ware = 1;
    end
    else
    begin
      if (doc is null) then
      begin
        doc = next value for doc_seq;
        insert into doc_list (id, optype_id, agent_id, state_id, worker_id)
          values (:doc, :p_optype, :p_agent, 2000, :p_worker);
      end
      x = mod(x * 48271, 2147483647);  want = 1 + (x - 1) * p_max_qty / 2147483646;
      line = next value for line_seq;
      execute procedure docflow_take_rows (p_worker, ware, p_snd, p_rcv, line, want) returning_values :taken;
      if (taken > 0) then
      begin
        insert into doc_data (id, doc_id, ware_id, qty, cost_purchase, cost_retail)
          select :line, :doc, w.id, :taken, :taken * w.price_purchase, :taken * w.price_retail
          from wares w where w.id = :ware;
        if (p_next_rcv > 0) then
          execute procedure docflow_put_rows (p_worker, ware, p_optype, p_next_rcv, line, taken);
        lines = lines + 1;
        units = units + taken;
      end
      next_ware = ware + 1;
    end
  end
  if (doc is not null and lines = 0) then
  begin
    -- Every row this document found free was taken by someone else first.
    delete from doc_list where id = :doc;
    doc = null;
  end
end^

-- A customer reserve for the waiting lines of client order P_ORDER: each line takes the
-- ware's oldest free stock rows, as many as the line still waits for, and as many of the
-- line's demand rows. DOC is null when no stock was free for any of them.
create procedure docflow_reserve_order (p_worker integer, p_order bigint)
returns (doc bigint, lines integer, units integer)
as
  declare agent integer;
  declare order_line bigint;
  declare ware integer;
  declare waiting integer;
  declare line bigint;
  declare taken integer;
  declare demand integer;
begin
  lines = 0;
  units = 0;
  select agent_id from doc_list where id = :p_order into :agent;
  for select l.id, l.ware_id from doc_data l where l.doc_id = :p_order order by l.ware_id
      into :order_line, :ware
  do
  begin
    select count(*) from qdistr q
      where q.snd_id = :order_line and q.snd_optype_id = 1000 and q.rcv_optype_id = 3300
      into :waiting;
    if (waiting > 0) then
    begin
      line = next value for line_seq;
      taken = 0;
      begin
        begin
          execute procedure docflow_take_rows (p_worker, ware, 2100, 3300, line, waiting) returning_values :taken;
          if (taken > 0) then
          begin
            execute procedure docflow_take_line_rows (order_line, 1000, 3300, line, taken) returning_values :demand;
            -- A concurrent reserve took some of the demand since it was counted: undo this line
            -- (the inner block's work is undone as the exception leaves it).
            if (demand <> taken) then
              exception docflow_not_eligible;
          end
        end
        when exception docflow_not_eligible do
          taken = 0;
      end
      if (taken > 0) then
      begin
        if (doc is null) then
        begin
          doc = next value for doc_seq;
          insert into doc_list (id, optype_id, agent_id, state_id, base_doc_id, worker_id)
            values (:doc, 3300, :agent, 2000, :p_order, :p_worker);
        end
        insert into doc_data (id, doc_id, ware_id, qty, cost_purchase, cost_retail)
          select :line, :doc, w.id, :taken, :taken * w.price_purchase, :taken * w.price_retail
          from wares w where w.id = :ware;
        lines = lines + 1;
        units = units + taken;
      end
    end
  end
  if (doc is not null) then
  begin
    execute procedure docflow_total (doc);
    execute procedure docflow_log_lines (doc, 3300, 1);
  end
end^

-- ---------------------------------------------------------------------------------- creation

-- Client order (CLO): a customer (or, in a quarter of the orders, our own firm replenishing
-- stock) orders 1 .. max_cust_rows random wares, 1 .. max_cust_qty each. Each line's
-- quantity waits, as rows, for a supplier order and (customers only) for a reserve.
create procedure docflow_client_order (p_worker integer, p_seed bigint)
returns (doc bigint, lines integer, units integer)
as
  declare x bigint;
  declare wares_count integer;
  declare max_rows integer;
  declare max_qty integer;
  declare customers integer;
  declare agent integer;
  declare wanted integer;
  declare i integer = 0;
  declare ware integer;
  declare line_qty integer;
  declare line bigint;
begin
  select m.wares, m.max_cust_rows, m.max_cust_qty, m.agents * 93 / 100 from working_modes m
    where m.mode_name = '${mode}'
    into :wares_count, :max_rows, :max_qty, :customers;
  x = docflow_rand_init(p_seed, 1000);
  x = mod(x * 48271, 2147483647);
  if ((x - 1) * 4 / 2147483646 = 0) then
    agent = 1;
  else
  begin
    x = mod(x * 48271, 2147483647);
    agent = 2 + (x - 1) * customers / 2147483646;
  end
  doc = next value for doc_seq;
  insert into doc_list (id, optype_id, agent_id, state_id, worker_id) values (:doc, 1000, :agent, 2000, :p_worker);
  x = mod(x * 48271, 2147483647);  wanted = 1 + (x - 1) * max_rows / 2147483646;
  lines = 0;
  units = 0;
  while (i < wanted) do
  begin
    x = mod(x * 48271, 2147483647);  ware = 1 + (x - 1) * wares_count / 2147483646;
    x = mod(x * 48271, 2147483647);  line_qty = 1 + (x - 1) * max_qty / 2147483646;
    -- One line per ware: a ware drawn again adds to its line.
    update doc_data
      set qty = qty + :line_qty,
          cost_purchase = cost_purchase + :line_qty * (select w.price_purchase from wares w where w.id = :ware),
          cost_retail = cost_retail + :line_qty * (select w.price_retail from wares w where w.id = :ware)
      where doc_id = :doc and ware_id = :ware;
    if (row_count = 0) then
    begin
      insert into doc_data (id, doc_id, ware_id, qty, cost_purchase, cost_retail)
        select next value for line_seq, :doc, w.id, :line_qty, :line_qty * w.price_purchase,
               :line_qty * w.price_retail
        from wares w where w.id = :ware;
      lines = lines + 1;
    end
    units = units + line_qty;
    i = i + 1;
  end
  for select l.id, l.ware_id, l.qty from doc_data l where l.doc_id = :doc order by l.ware_id
      into :line, :ware, :line_qty
  do
  begin
    execute procedure docflow_put_rows (p_worker, ware, 1000, 1200, line, line_qty);
    if (agent <> 1) then
      execute procedure docflow_put_rows (p_worker, ware, 1000, 3300, line, line_qty);
  end
  execute procedure docflow_total (doc);
  execute procedure docflow_log_lines (doc, 1000, 1);
end^

-- Order to a supplier (ORD): a random supplier is ordered what client orders wait for.
create procedure docflow_supplier_order (p_worker integer, p_seed bigint)
returns (doc bigint, lines integer, units integer)
as
  declare x bigint;
  declare wares_count integer;
  declare max_rows integer;
  declare max_qty integer;
  declare agents_count integer;
  declare customers integer;
  declare agent integer;
begin
  select m.wares, m.max_supp_rows, m.max_supp_qty, m.agents, m.agents * 93 / 100 from working_modes m
    where m.mode_name = '${mode}'
    into :wares_count, :max_rows, :max_qty, :agents_count, :customers;
  x = docflow_rand_init(p_seed, 1200);
  x = mod(x * 48271, 2147483647);
  agent = customers + 2 + (x - 1) * (agents_count - customers - 1) / 2147483646;
  execute procedure docflow_doc_from_rows (p_worker, x, 1200, agent, 1000, 1200, 2000, max_rows, max_qty, wares_count)
    returning_values :doc, :lines, :units;
  if (doc is null) then
    exception docflow_nothing_to_do 'docflow: no client order waits for a supplier order';
  execute procedure docflow_total (doc);
  execute procedure docflow_log_lines (doc, 1200, 1);
end^

-- Supplier invoice (SUP), a draft: a random supplier invoices what was ordered from suppliers.
create procedure docflow_supplier_invoice (p_worker integer, p_seed bigint)
returns (doc bigint, lines integer, units integer)
as
  declare x bigint;
  declare wares_count integer;
  declare max_rows integer;
  declare max_qty integer;
  declare agents_count integer;
  declare customers integer;
  declare agent integer;
begin
  select m.wares, m.max_supp_rows, m.max_supp_qty, m.agents, m.agents * 93 / 100 from working_modes m
    where m.mode_name = '${mode}'
    into :wares_count, :max_rows, :max_qty, :agents_count, :customers;
  x = docflow_rand_init(p_seed, 2000);
  x = mod(x * 48271, 2147483647);
  agent = customers + 2 + (x - 1) * (agents_count - customers - 1) / 2147483646;
  execute procedure docflow_doc_from_rows (p_worker, x, 2000, agent, 1200, 2000, 0, max_rows, max_qty, wares_count)
    returning_values :doc, :lines, :units;
  if (doc is null) then
    exception docflow_nothing_to_do 'docflow: nothing ordered waits for an invoice';
  execute procedure docflow_total (doc);
  execute procedure docflow_log_lines (doc, 2000, 1);
end^

-- Invoice accepted into stock (SUP -> INC): its quantities become free stock rows, its cost a
-- debt to the supplier; then the new stock is reserved for the client orders that wait for
-- these wares, oldest first (one order per ware of the invoice).
create procedure docflow_add_invoice_to_stock (p_worker integer, p_seed bigint)
returns (doc bigint, lines integer, units integer, reserves integer)
as
  declare x bigint;
  declare candidate bigint;
  declare claimed smallint;
  declare line bigint;
  declare ware integer;
  declare line_qty integer;
  declare agent integer;
  declare cost numeric(18, 2);
  declare waiting_order bigint;
  declare reserve bigint;
  declare reserve_lines integer;
  declare reserve_units integer;
begin
  x = docflow_rand_init(p_seed, 2100);
  x = mod(x * 48271, 2147483647);
  for select doc from docflow_candidates (:p_worker, 2000, 2000, :x, 10) into :candidate do
  begin
    execute procedure docflow_claim (candidate, 2000, 2000, 2100, 2010) returning_values :claimed;
    if (claimed = 1) then
    begin
      doc = candidate;
      leave;
    end
  end
  if (doc is null) then
    exception docflow_nothing_to_do 'docflow: no supplier invoice to accept';
  lines = 0;
  units = 0;
  for select l.id, l.ware_id, l.qty from doc_data l where l.doc_id = :doc order by l.ware_id
      into :line, :ware, :line_qty
  do
  begin
    execute procedure docflow_put_rows (p_worker, ware, 2100, 3300, line, line_qty);
    lines = lines + 1;
    units = units + line_qty;
  end
  execute procedure docflow_log_lines (doc, 2100, 1);
  select agent_id, cost_purchase from doc_list where id = :doc into :agent, :cost;
  execute procedure docflow_owe (p_worker, agent, 2100, 4000, doc, cost);
  execute procedure docflow_log_money (doc, agent, 2100, cost);

  reserves = 0;
  for select l.ware_id from doc_data l where l.doc_id = :doc order by l.ware_id into :ware do
  begin
    waiting_order = null;
    select first 1 l.doc_id from qdistr q join doc_data l on l.id = q.snd_id
      where q.worker_id = :p_worker and q.snd_optype_id = 1000 and q.rcv_optype_id = 3300 and q.ware_id = :ware
      order by q.worker_id, q.snd_optype_id, q.rcv_optype_id, q.ware_id, q.id
      into :waiting_order;
    if (waiting_order is not null) then
    begin
      execute procedure docflow_reserve_order (p_worker, waiting_order)
        returning_values :reserve, :reserve_lines, :reserve_units;
      if (reserve is not null) then
        reserves = reserves + 1;
    end
  end
end^

-- Customer reserve (RES): from a random ware on, the first ware with free stock that a
-- customer's order waits for; the oldest such order gets a reserve for every line it can.
create procedure docflow_customer_reserve (p_worker integer, p_seed bigint)
returns (doc bigint, lines integer, units integer)
as
  declare x bigint;
  declare wares_count integer;
  declare start_ware integer;
  declare next_ware integer;
  declare wrapped smallint = 0;
  declare probes integer = 0;
  declare ware integer;
  declare waiting_order bigint;
begin
  select m.wares from working_modes m where m.mode_name = '${mode}' into :wares_count;
  x = docflow_rand_init(p_seed, 3300);
  x = mod(x * 48271, 2147483647);
  start_ware = 1 + (x - 1) * wares_count / 2147483646;
  next_ware = start_ware;
  while (doc is null and probes < 20) do
  begin
    ware = null;
    select first 1 q.ware_id from qdistr q
      where q.worker_id = :p_worker and q.snd_optype_id = 2100 and q.rcv_optype_id = 3300
        and q.ware_id >= :next_ware
      order by q.worker_id, q.snd_optype_id, q.rcv_optype_id, q.ware_id, q.id
      into :ware;
    if (ware is null or (wrapped = 1 and ware >= start_ware)) then
    begin
      if (wrapped = 1 or start_ware = 1) then
        leave;
      wrapped = 1;
      next_ware = 1;
    end
    else
    begin
      waiting_order = null;
      select first 1 l.doc_id from qdistr q join doc_data l on l.id = q.snd_id
        where q.worker_id = :p_worker and q.snd_optype_id = 1000 and q.rcv_optype_id = 3300 and q.ware_id = :ware
        order by q.worker_id, q.snd_optype_id, q.rcv_optype_id, q.ware_id, q.id
        into :waiting_order;
      if (waiting_order is not null) then
        execute procedure docflow_reserve_order (p_worker, waiting_order) returning_values :doc, :lines, :units;
      next_ware = ware + 1;
      probes = probes + 1;
    end
  end
  if (doc is null) then
    exception docflow_nothing_to_do 'docflow: no order waits for stock that is free';
end^

-- Sale / write-off (RES -> SAL): the reserved quantity leaves the stock, its retail cost
-- becomes the customer's debt.
create procedure docflow_reserve_write_off (p_worker integer, p_seed bigint)
returns (doc bigint, lines integer, units integer)
as
  declare x bigint;
  declare candidate bigint;
  declare claimed smallint;
  declare agent integer;
  declare cost numeric(18, 2);
begin
  x = docflow_rand_init(p_seed, 3400);
  x = mod(x * 48271, 2147483647);
  for select doc from docflow_candidates (:p_worker, 3300, 2000, :x, 10) into :candidate do
  begin
    execute procedure docflow_claim (candidate, 3300, 2000, 3400, 2010) returning_values :claimed;
    if (claimed = 1) then
    begin
      doc = candidate;
      leave;
    end
  end
  if (doc is null) then
    exception docflow_nothing_to_do 'docflow: no reserve to write off';
  execute procedure docflow_log_lines (doc, 3400, 1);
  select d.agent_id, d.cost_retail, (select count(*) from doc_data l where l.doc_id = d.id),
         (select sum(l.qty) from doc_data l where l.doc_id = d.id)
    from doc_list d where d.id = :doc
    into :agent, :cost, :lines, :units;
  execute procedure docflow_owe (p_worker, agent, 3400, 5000, doc, cost);
  execute procedure docflow_log_money (doc, agent, 3400, cost);
end^

-- A payment (PSU to a supplier for an accepted invoice, PCU from a customer for a sale): the
-- paid document is closed and the payment takes all its money rows.
create procedure docflow_pay (p_worker integer, p_seed bigint, p_paid_optype smallint, p_optype smallint)
returns (doc bigint, money_rows integer)
as
  declare x bigint;
  declare candidate bigint;
  declare paid bigint;
  declare claimed smallint;
  declare agent integer;
  declare amount numeric(18, 2) = 0;
  declare row_id bigint;
  declare cost numeric(18, 2);
  declare snd smallint;
  declare rcv smallint;
begin
  x = docflow_rand_init(p_seed, p_optype);
  x = mod(x * 48271, 2147483647);
  for select doc from docflow_candidates (:p_worker, :p_paid_optype, 2010, :x, 10) into :candidate do
  begin
    execute procedure docflow_claim (candidate, p_paid_optype, 2010, p_paid_optype, 2020) returning_values :claimed;
    if (claimed = 1) then
    begin
      paid = candidate;
      leave;
    end
  end
  if (paid is null) then
    exception docflow_nothing_to_do 'docflow: nothing to pay';
  select agent_id from doc_list where id = :paid into :agent;
  doc = next value for doc_seq;
  insert into doc_list (id, optype_id, agent_id, state_id, base_doc_id, worker_id)
    values (:doc, :p_optype, :agent, 2000, :paid, :p_worker);
  money_rows = 0;
  for select p.id, p.cost, p.snd_optype_id, p.rcv_optype_id from pdistr p where p.snd_id = :paid
      into :row_id, :cost, :snd, :rcv
  do
  begin
    delete from pdistr where id = :row_id;
    insert into pstorned (id, worker_id, agent_id, snd_optype_id, rcv_optype_id, snd_id, rcv_id, cost)
      values (:row_id, :p_worker, :agent, :snd, :rcv, :paid, :doc, :cost);
    amount = amount + cost;
    money_rows = money_rows + 1;
  end
  if (money_rows = 0) then
    exception docflow_missing 'docflow: a document to be paid owes no money rows';
  update doc_list set cost_purchase = iif(:p_optype = 4000, :amount, 0), cost_retail = iif(:p_optype = 5000, :amount, 0)
    where id = :doc;
  execute procedure docflow_log_money (doc, agent, p_optype, amount);
end^

create procedure docflow_pay_to_supplier (p_worker integer, p_seed bigint)
returns (doc bigint, money_rows integer)
as
begin
  execute procedure docflow_pay (p_worker, p_seed, 2100, 4000) returning_values :doc, :money_rows;
end^

create procedure docflow_pay_from_customer (p_worker integer, p_seed bigint)
returns (doc bigint, money_rows integer)
as
begin
  execute procedure docflow_pay (p_worker, p_seed, 3400, 5000) returning_values :doc, :money_rows;
end^

-- ---------------------------------------------------------------------------------- cancellations
-- Each tries up to 10 candidates of its kind; a candidate that cannot be cancelled (a later
-- document took some of its rows) raises DOCFLOW_NOT_ELIGIBLE and the next one is tried. The
-- work on a candidate sits in an inner block inside the block with the WHEN handler: Firebird
-- undoes what a block did when an exception leaves it, but a WHEN of the block itself undoes
-- only the statement that failed.

-- Cancel a client order none of whose rows was taken: it becomes a refused order (CLR).
create procedure docflow_cancel_client_order (p_worker integer, p_seed bigint)
returns (doc bigint, lines integer, units integer)
as
  declare x bigint;
  declare candidate bigint;
  declare claimed smallint;
  declare agent integer;
  declare line bigint;
  declare line_qty integer;
begin
  x = docflow_rand_init(p_seed, 1100);
  x = mod(x * 48271, 2147483647);
  for select doc from docflow_candidates (:p_worker, 1000, 2000, :x, 10) into :candidate do
  begin
    if (not exists (select 1 from doc_data l join qstorned s on s.snd_id = l.id where l.doc_id = :candidate)) then
    begin
      begin
        begin
          execute procedure docflow_claim (candidate, 1000, 2000, 1100, 2030) returning_values :claimed;
          if (claimed = 0) then
            exception docflow_not_eligible;
          select agent_id from doc_list where id = :candidate into :agent;
          lines = 0;
          units = 0;
          for select l.id, l.qty from doc_data l where l.doc_id = :candidate order by l.ware_id into :line, :line_qty do
          begin
            execute procedure docflow_drop_rows (line, iif(agent = 1, line_qty, 2 * line_qty));
            lines = lines + 1;
            units = units + line_qty;
          end
          execute procedure docflow_log_lines (candidate, 1000, -1);
          execute procedure docflow_log_lines (candidate, 1100, 1);
          doc = candidate;
        end
        when exception docflow_not_eligible do
          doc = null;
      end
      if (doc is not null) then
        leave;
    end
  end
  if (doc is null) then
    exception docflow_nothing_to_do 'docflow: no client order can be cancelled';
end^

-- A supplier invoice draft cancelled: the ordered rows it took are free again.
create procedure docflow_cancel_invoice_draft (p_doc bigint)
returns (lines integer, units integer)
as
  declare claimed smallint;
  declare line bigint;
  declare line_qty integer;
  declare given integer;
begin
  execute procedure docflow_claim (p_doc, 2000, 2000, 2000, 2030) returning_values :claimed;
  if (claimed = 0) then
    exception docflow_not_eligible;
  lines = 0;
  units = 0;
  for select l.id, l.qty from doc_data l where l.doc_id = :p_doc order by l.ware_id into :line, :line_qty do
  begin
    execute procedure docflow_give_back (line) returning_values :given;
    if (given <> line_qty) then
      exception docflow_not_eligible;
    lines = lines + 1;
    units = units + line_qty;
  end
  execute procedure docflow_log_lines (p_doc, 2000, -1);
end^

create procedure docflow_cancel_supplier_invoice (p_worker integer, p_seed bigint)
returns (doc bigint, lines integer, units integer)
as
  declare x bigint;
  declare candidate bigint;
begin
  x = docflow_rand_init(p_seed, 2001);
  x = mod(x * 48271, 2147483647);
  for select doc from docflow_candidates (:p_worker, 2000, 2000, :x, 10) into :candidate do
  begin
    begin
      execute procedure docflow_cancel_invoice_draft (candidate) returning_values :lines, :units;
      doc = candidate;
      when exception docflow_not_eligible do
        doc = null;
    end
    if (doc is not null) then
      leave;
  end
  if (doc is null) then
    exception docflow_nothing_to_do 'docflow: no supplier invoice can be cancelled';
end^

-- Cancel a supplier order, and with it the invoice drafts that took its rows. Not possible
-- once one of those invoices was accepted into stock.
create procedure docflow_cancel_supplier_order (p_worker integer, p_seed bigint)
returns (doc bigint, lines integer, units integer, cascaded integer)
as
  declare x bigint;
  declare candidate bigint;
  declare claimed smallint;
  declare invoice bigint;
  declare line bigint;
  declare line_qty integer;
  declare given integer;
  declare invoice_lines integer;
  declare invoice_units integer;
begin
  x = docflow_rand_init(p_seed, 1201);
  x = mod(x * 48271, 2147483647);
  for select doc from docflow_candidates (:p_worker, 1200, 2000, :x, 10) into :candidate do
  begin
    if (not exists (select 1 from doc_data l
                    join qstorned s on s.snd_id = l.id
                    join doc_data r on r.id = s.rcv_id
                    join doc_list d on d.id = r.doc_id
                    where l.doc_id = :candidate and (d.optype_id <> 2000 or d.state_id <> 2000))) then
    begin
      begin
        begin
          execute procedure docflow_claim (candidate, 1200, 2000, 1200, 2030) returning_values :claimed;
          if (claimed = 0) then
            exception docflow_not_eligible;
          cascaded = 0;
          for select distinct r.doc_id from doc_data l
              join qstorned s on s.snd_id = l.id
              join doc_data r on r.id = s.rcv_id
              where l.doc_id = :candidate
              into :invoice
          do
          begin
            execute procedure docflow_cancel_invoice_draft (invoice) returning_values :invoice_lines, :invoice_units;
            cascaded = cascaded + 1;
          end
          lines = 0;
          units = 0;
          for select l.id, l.qty from doc_data l where l.doc_id = :candidate order by l.ware_id into :line, :line_qty do
          begin
            execute procedure docflow_drop_rows (line, line_qty);
            execute procedure docflow_give_back (line) returning_values :given;
            if (given <> line_qty) then
              exception docflow_not_eligible;
            lines = lines + 1;
            units = units + line_qty;
          end
          execute procedure docflow_log_lines (candidate, 1200, -1);
          doc = candidate;
        end
        when exception docflow_not_eligible do
        begin
          doc = null;
          cascaded = null;
        end
      end
      if (doc is not null) then
        leave;
    end
  end
  if (doc is null) then
    exception docflow_nothing_to_do 'docflow: no supplier order can be cancelled';
end^

-- A customer reserve cancelled: the stock and the order's demand rows it took are free again.
create procedure docflow_cancel_reserve_doc (p_doc bigint)
returns (lines integer, units integer)
as
  declare claimed smallint;
  declare line bigint;
  declare line_qty integer;
  declare given integer;
begin
  execute procedure docflow_claim (p_doc, 3300, 2000, 3300, 2030) returning_values :claimed;
  if (claimed = 0) then
    exception docflow_not_eligible;
  lines = 0;
  units = 0;
  for select l.id, l.qty from doc_data l where l.doc_id = :p_doc order by l.ware_id into :line, :line_qty do
  begin
    execute procedure docflow_give_back (line) returning_values :given;
    if (given <> 2 * line_qty) then
      exception docflow_not_eligible;
    lines = lines + 1;
    units = units + line_qty;
  end
  execute procedure docflow_log_lines (p_doc, 3300, -1);
end^

create procedure docflow_cancel_customer_reserve (p_worker integer, p_seed bigint)
returns (doc bigint, lines integer, units integer)
as
  declare x bigint;
  declare candidate bigint;
begin
  x = docflow_rand_init(p_seed, 3301);
  x = mod(x * 48271, 2147483647);
  for select doc from docflow_candidates (:p_worker, 3300, 2000, :x, 10) into :candidate do
  begin
    begin
      execute procedure docflow_cancel_reserve_doc (candidate) returning_values :lines, :units;
      doc = candidate;
      when exception docflow_not_eligible do
        doc = null;
    end
    if (doc is not null) then
      leave;
  end
  if (doc is null) then
    exception docflow_nothing_to_do 'docflow: no reserve can be cancelled';
end^

-- Cancel accepting an invoice (INC -> SUP draft) that is unpaid, and with it the reserves
-- that took its stock (they give the stock back). Not possible once one of those reserves was
-- written off.
create procedure docflow_cancel_adding_invoice (p_worker integer, p_seed bigint)
returns (doc bigint, lines integer, units integer, cascaded integer)
as
  declare x bigint;
  declare candidate bigint;
  declare claimed smallint;
  declare line bigint;
  declare line_qty integer;
  declare agent integer;
  declare cost numeric(18, 2);
  declare owed numeric(18, 2);
  declare reserve bigint;
  declare reserve_lines integer;
  declare reserve_units integer;
begin
  x = docflow_rand_init(p_seed, 2101);
  x = mod(x * 48271, 2147483647);
  for select doc from docflow_candidates (:p_worker, 2100, 2010, :x, 10) into :candidate do
  begin
    if (not exists (select 1 from doc_data l
                    join qstorned s on s.snd_id = l.id
                    join doc_data r on r.id = s.rcv_id
                    join doc_list d on d.id = r.doc_id
                    where l.doc_id = :candidate and (d.optype_id <> 3300 or d.state_id <> 2000))) then
    begin
      begin
        begin
          execute procedure docflow_claim (candidate, 2100, 2010, 2000, 2000) returning_values :claimed;
          if (claimed = 0) then
            exception docflow_not_eligible;
          cascaded = 0;
          for select distinct r.doc_id from doc_data l
              join qstorned s on s.snd_id = l.id
              join doc_data r on r.id = s.rcv_id
              where l.doc_id = :candidate
              into :reserve
          do
          begin
            execute procedure docflow_cancel_reserve_doc (reserve) returning_values :reserve_lines, :reserve_units;
            cascaded = cascaded + 1;
          end
          lines = 0;
          units = 0;
          for select l.id, l.qty from doc_data l where l.doc_id = :candidate order by l.ware_id into :line, :line_qty do
          begin
            execute procedure docflow_drop_rows (line, line_qty);
            lines = lines + 1;
            units = units + line_qty;
          end
          select agent_id, cost_purchase from doc_list where id = :candidate into :agent, :cost;
          select coalesce(sum(cost), 0) from pdistr where snd_id = :candidate into :owed;
          if (owed <> cost) then
            exception docflow_not_eligible;
          delete from pdistr where snd_id = :candidate;
          execute procedure docflow_log_lines (candidate, 2100, -1);
          execute procedure docflow_log_money (candidate, agent, 2100, -cost);
          doc = candidate;
        end
        when exception docflow_not_eligible do
        begin
          doc = null;
          cascaded = null;
        end
      end
      if (doc is not null) then
        leave;
    end
  end
  if (doc is null) then
    exception docflow_nothing_to_do 'docflow: no accepted invoice can be cancelled';
end^

-- Cancel a write-off (SAL -> RES) that is not paid yet.
create procedure docflow_cancel_write_off (p_worker integer, p_seed bigint)
returns (doc bigint, lines integer, units integer)
as
  declare x bigint;
  declare candidate bigint;
  declare claimed smallint;
  declare agent integer;
  declare cost numeric(18, 2);
  declare owed numeric(18, 2);
begin
  x = docflow_rand_init(p_seed, 3401);
  x = mod(x * 48271, 2147483647);
  for select doc from docflow_candidates (:p_worker, 3400, 2010, :x, 10) into :candidate do
  begin
    begin
      begin
        execute procedure docflow_claim (candidate, 3400, 2010, 3300, 2000) returning_values :claimed;
        if (claimed = 0) then
          exception docflow_not_eligible;
        select d.agent_id, d.cost_retail, (select count(*) from doc_data l where l.doc_id = d.id),
               (select sum(l.qty) from doc_data l where l.doc_id = d.id)
          from doc_list d where d.id = :candidate
          into :agent, :cost, :lines, :units;
        select coalesce(sum(cost), 0) from pdistr where snd_id = :candidate into :owed;
        if (owed <> cost) then
          exception docflow_not_eligible;
        delete from pdistr where snd_id = :candidate;
        execute procedure docflow_log_lines (candidate, 3400, -1);
        execute procedure docflow_log_money (candidate, agent, 3400, -cost);
        doc = candidate;
      end
      when exception docflow_not_eligible do
        doc = null;
    end
    if (doc is not null) then
      leave;
  end
  if (doc is null) then
    exception docflow_nothing_to_do 'docflow: no write-off can be cancelled';
end^

-- Cancel a payment: its money rows are owed again and the paid document is open for payment.
create procedure docflow_cancel_payment (p_worker integer, p_seed bigint, p_optype smallint)
returns (doc bigint, money_rows integer)
as
  declare x bigint;
  declare candidate bigint;
  declare claimed smallint;
  declare paid bigint;
  declare agent integer;
  declare amount numeric(18, 2);
  declare given numeric(18, 2);
  declare row_id bigint;
  declare worker integer;
  declare snd smallint;
  declare rcv smallint;
  declare cost numeric(18, 2);
begin
  x = docflow_rand_init(p_seed, p_optype + 1);
  x = mod(x * 48271, 2147483647);
  for select doc from docflow_candidates (:p_worker, :p_optype, 2000, :x, 10) into :candidate do
  begin
    begin
      begin
        execute procedure docflow_claim (candidate, p_optype, 2000, p_optype, 2030) returning_values :claimed;
        if (claimed = 0) then
          exception docflow_not_eligible;
        select base_doc_id, agent_id, iif(:p_optype = 4000, cost_purchase, cost_retail) from doc_list
          where id = :candidate into :paid, :agent, :amount;
        given = 0;
        money_rows = 0;
        for select s.id, s.worker_id, s.snd_optype_id, s.rcv_optype_id, s.cost from pstorned s
            where s.rcv_id = :candidate
            into :row_id, :worker, :snd, :rcv, :cost
        do
        begin
          delete from pstorned where id = :row_id;
          insert into pdistr (id, worker_id, agent_id, snd_optype_id, rcv_optype_id, snd_id, cost)
            values (:row_id, :worker, :agent, :snd, :rcv, :paid, :cost);
          given = given + cost;
          money_rows = money_rows + 1;
        end
        if (given <> amount) then
          exception docflow_not_eligible;
        update doc_list set state_id = 2010 where id = :paid and state_id = 2020;
        if (row_count = 0) then
          exception docflow_not_eligible;
        execute procedure docflow_log_money (candidate, agent, p_optype, -amount);
        doc = candidate;
      end
      when exception docflow_not_eligible do
        doc = null;
    end
    if (doc is not null) then
      leave;
  end
  if (doc is null) then
    exception docflow_nothing_to_do 'docflow: no payment can be cancelled';
end^

create procedure docflow_cancel_supplier_payment (p_worker integer, p_seed bigint)
returns (doc bigint, money_rows integer)
as
begin
  execute procedure docflow_cancel_payment (p_worker, p_seed, 4000) returning_values :doc, :money_rows;
end^

create procedure docflow_cancel_customer_payment (p_worker integer, p_seed bigint)
returns (doc bigint, money_rows integer)
as
begin
  execute procedure docflow_cancel_payment (p_worker, p_seed, 5000) returning_values :doc, :money_rows;
end^

-- ---------------------------------------------------------------------------------- service units
-- One attachment at a time per unit: the semaphore row is updated first, in a NO WAIT
-- transaction; if another attachment holds it (lock conflict) or updated it since this
-- snapshot began (update conflict), the unit ends with DOCFLOW_SERVICE_BUSY, a by-design
-- rollback. The row stays locked until the unit's transaction ends.
--
-- Run in a SNAPSHOT transaction: the sums, the copy to *_AGGREGATED and the delete all see the
-- same log rows; rows committed meanwhile wait for the next run.

create procedure docflow_make_invnt_saldo
returns (log_rows integer)
as
  declare started bigint;
  declare started_at timestamp;
  declare ware integer;
  declare d_clo bigint;
  declare d_clr bigint;
  declare d_ord bigint;
  declare d_sup bigint;
  declare d_avl bigint;
  declare d_res bigint;
  declare d_inc bigint;
  declare d_out bigint;
  declare d_cost_inc numeric(18, 2);
  declare d_cost_out numeric(18, 2);
  declare n integer;
begin
  begin
    update semaphores set runs = runs + 1 where name = 'invnt_saldo';
    when gdscode lock_conflict, gdscode update_conflict, gdscode deadlock, gdscode concurrent_transaction,
         gdscode lock_timeout do
      exception docflow_service_busy;
  end
  started = gen_id(service_ticket, 1);
  started_at = cast('now' as timestamp);
  log_rows = 0;
  for select l.ware_id, sum(l.qty_diff * o.m_qty_clo), sum(l.qty_diff * o.m_qty_clr), sum(l.qty_diff * o.m_qty_ord),
             sum(l.qty_diff * o.m_qty_sup), sum(l.qty_diff * o.m_qty_avl), sum(l.qty_diff * o.m_qty_res),
             sum(l.qty_diff * o.m_qty_inc), sum(l.qty_diff * o.m_qty_out), sum(l.cost_diff * o.m_cost_inc),
             sum(l.cost_diff * o.m_cost_out), count(*)
      from invnt_turnover_log l join optypes o on o.id = l.optype_id
      group by l.ware_id
      into :ware, :d_clo, :d_clr, :d_ord, :d_sup, :d_avl, :d_res, :d_inc, :d_out, :d_cost_inc, :d_cost_out, :n
  do
  begin
    update invnt_saldo
      set qty_clo = qty_clo + :d_clo, qty_clr = qty_clr + :d_clr, qty_ord = qty_ord + :d_ord,
          qty_sup = qty_sup + :d_sup, qty_avl = qty_avl + :d_avl, qty_res = qty_res + :d_res,
          qty_inc = qty_inc + :d_inc, qty_out = qty_out + :d_out,
          cost_inc = cost_inc + :d_cost_inc, cost_out = cost_out + :d_cost_out
      where ware_id = :ware;
    if (row_count = 0) then
      exception docflow_missing 'docflow: no balance row for ware ' || :ware;
    log_rows = log_rows + n;
  end
  insert into invnt_turnover_aggregated (id, ware_id, doc_id, line_id, optype_id, qty_diff, cost_diff)
    select id, ware_id, doc_id, line_id, optype_id, qty_diff, cost_diff from invnt_turnover_log;
  delete from invnt_turnover_log;
  insert into service_runs (id, unit_name, attachment_id, started_ticket, finished_ticket, started_at, finished_at,
                            log_rows)
    values (next value for log_seq, 'make_invnt_saldo', current_connection, :started, gen_id(service_ticket, 1),
            :started_at, cast('now' as timestamp), :log_rows);
end^

create procedure docflow_make_money_saldo
returns (log_rows integer)
as
  declare started bigint;
  declare started_at timestamp;
  declare agent integer;
  declare d_supp numeric(18, 2);
  declare d_cust numeric(18, 2);
  declare n integer;
begin
  begin
    update semaphores set runs = runs + 1 where name = 'money_saldo';
    when gdscode lock_conflict, gdscode update_conflict, gdscode deadlock, gdscode concurrent_transaction,
         gdscode lock_timeout do
      exception docflow_service_busy;
  end
  started = gen_id(service_ticket, 1);
  started_at = cast('now' as timestamp);
  log_rows = 0;
  for select l.agent_id, sum(l.cost_diff * o.m_supp_debt), sum(l.cost_diff * o.m_cust_debt), count(*)
      from money_turnover_log l join optypes o on o.id = l.optype_id
      group by l.agent_id
      into :agent, :d_supp, :d_cust, :n
  do
  begin
    update money_saldo set supp_debt = supp_debt + :d_supp, cust_debt = cust_debt + :d_cust where agent_id = :agent;
    if (row_count = 0) then
      exception docflow_missing 'docflow: no balance row for agent ' || :agent;
    log_rows = log_rows + n;
  end
  insert into money_turnover_aggregated (id, agent_id, doc_id, optype_id, cost_diff)
    select id, agent_id, doc_id, optype_id, cost_diff from money_turnover_log;
  delete from money_turnover_log;
  insert into service_runs (id, unit_name, attachment_id, started_ticket, finished_ticket, started_at, finished_at,
                            log_rows)
    values (next value for log_seq, 'make_money_saldo', current_connection, :started, gen_id(service_ticket, 1),
            :started_at, cast('now' as timestamp), :log_rows);
end^

set term ; ^

/*
 * docflow: the business model of OLTP-EMUL, the Firebird project's own load test (README.md).
 *
 * Reference data (wares, agents, operation types), documents (header + lines), two turnover
 * logs aggregated into balances by service units, and the FIFO "value-to-rows" tables:
 *
 *   QDISTR / QSTORNED  one row per unit of a ware that one document line produced (SND_ID) for
 *                      the next step of the chain (SND_OPTYPE_ID -> RCV_OPTYPE_ID). A free row is
 *                      in QDISTR; the line of the next document that took it (RCV_ID) moved it to
 *                      QSTORNED with the same ID; a cancellation moves it back, so it keeps its
 *                      place in the FIFO order.
 *   PDISTR / PSTORNED  the same for money: an accepted invoice or a sale owes its cost in rows,
 *                      a payment takes them.
 *
 * Concurrent documents take different rows instead of all updating one balance row per ware
 * (the hot spot of a naive design); the balances are only updated by the service units, one
 * attachment at a time, from the logs the business units insert into.
 *
 * Unlike tpcc, every index is created here, before the population: the population runs the
 * business procedures themselves (load.sql), which need them.
 *
 * Text columns are CHARACTER SET ASCII (the database default, UTF8, reserves four bytes per
 * character in record buffers); money is NUMERIC(18, 2), exact, so the checks compare with '='.
 */

-- Working modes: OLTP-EMUL's dimensions (src/oltp50_config.nix), the first of each group:
-- small = SMALL_01, medium = MEDIUM_01, large = LARGE_01, heavy = HEAVY_01. --scale mode=...
-- picks the row; every procedure reads its sizes from it.
create table working_modes (
    mode_name      varchar(10) character set ascii not null primary key,
    wares          integer not null,   -- wares in the catalogue
    max_cust_rows  integer not null,   -- lines of a customer document: 1 .. max_cust_rows
    max_supp_rows  integer not null,   -- lines of a supplier document: 1 .. max_supp_rows
    max_cust_qty   integer not null,   -- quantity of a customer line: 1 .. max_cust_qty
    max_supp_qty   integer not null,   -- quantity of a supplier line: 1 .. max_supp_qty
    agents         integer not null    -- agents: our firm, 93 % customers, the rest suppliers
);
insert into working_modes values ('small',    100,   5,  20,   5,  20,   300);
insert into working_modes values ('medium',   700,  20,  60,  30, 100,  2000);
insert into working_modes values ('large',   5000,  70, 200, 100, 300, 10000);
insert into working_modes values ('heavy',  50000, 250, 500, 300, 900, 20000);

-- Operation types with the direction each one moves the balances in. A turnover log row
-- (optype, qty_diff, cost_diff) adds M_x * qty_diff to quantity column x of the ware's balance
-- and M_COST_x * cost_diff to its cost columns; a money log row adds M_x * cost_diff to the
-- agent's debts. A cancellation logs the same optype with the opposite sign.
create table optypes (
    id            smallint not null primary key,
    mnemonic      char(3) character set ascii not null,
    name          varchar(40) character set ascii not null,
    m_qty_clo     smallint default 0 not null,  -- client orders not yet ordered from a supplier
    m_qty_clr     smallint default 0 not null,  -- refused (cancelled) client orders
    m_qty_ord     smallint default 0 not null,  -- ordered from suppliers, not yet invoiced
    m_qty_sup     smallint default 0 not null,  -- in supplier invoices not yet accepted
    m_qty_avl     smallint default 0 not null,  -- in stock, available
    m_qty_res     smallint default 0 not null,  -- in stock, reserved for a customer
    m_qty_inc     smallint default 0 not null,  -- received into stock, ever
    m_qty_out     smallint default 0 not null,  -- sold / written off, ever
    m_cost_inc    smallint default 0 not null,  -- purchase value received
    m_cost_out    smallint default 0 not null,  -- purchase value written off
    m_supp_debt   smallint default 0 not null,  -- what we owe suppliers
    m_cust_debt   smallint default 0 not null   -- what customers owe us
);
insert into optypes (id, mnemonic, name, m_qty_clo) values (1000, 'CLO', 'client order', 1);
insert into optypes (id, mnemonic, name, m_qty_clr) values (1100, 'CLR', 'refused client order', 1);
insert into optypes (id, mnemonic, name, m_qty_clo, m_qty_ord) values (1200, 'ORD', 'order to supplier', -1, 1);
insert into optypes (id, mnemonic, name, m_qty_ord, m_qty_sup) values (2000, 'SUP', 'supplier invoice', -1, 1);
insert into optypes (id, mnemonic, name, m_qty_sup, m_qty_avl, m_qty_inc, m_cost_inc, m_supp_debt)
  values (2100, 'INC', 'invoice accepted into stock', -1, 1, 1, 1, 1);
insert into optypes (id, mnemonic, name, m_qty_avl, m_qty_res) values (3300, 'RES', 'customer reserve', -1, 1);
insert into optypes (id, mnemonic, name, m_qty_res, m_qty_out, m_cost_out, m_cust_debt)
  values (3400, 'SAL', 'sale / write-off', -1, 1, 1, 1);
insert into optypes (id, mnemonic, name, m_supp_debt) values (4000, 'PSU', 'payment to supplier', -1);
insert into optypes (id, mnemonic, name, m_cust_debt) values (5000, 'PCU', 'payment from customer', -1);

create table doc_states (
    id    smallint not null primary key,
    name  varchar(20) character set ascii not null
);
insert into doc_states values (2000, 'open');       -- created; can be cancelled
insert into doc_states values (2010, 'fixed');      -- accepted into stock / written off: owes money
insert into doc_states values (2020, 'closed');     -- paid
insert into doc_states values (2030, 'cancelled');  -- holds no FIFO rows

-- The steps a document of each type went through: its quantities moved the balances by the
-- multipliers of every step (an accepted invoice was first a supplier invoice, a sale first a
-- reserve). The check "balances agree with the documents" rebuilds the balances from this.
create table optype_steps (
    doc_optype_id   smallint not null,
    step_optype_id  smallint not null,
    primary key (doc_optype_id, step_optype_id)
);
insert into optype_steps values (1000, 1000);
insert into optype_steps values (1100, 1100);
insert into optype_steps values (1200, 1200);
insert into optype_steps values (2000, 2000);
insert into optype_steps values (2100, 2000);
insert into optype_steps values (2100, 2100);
insert into optype_steps values (3300, 3300);
insert into optype_steps values (3400, 3300);
insert into optype_steps values (3400, 3400);

-- Which FIFO rows a line of each document type produced ('P': SND_ID = the line) or took
-- ('T': RCV_ID = the line); each such set has exactly the line's quantity of rows.
-- Client orders of our own firm are stock replenishment, never reserved (CUSTOMERS_ONLY).
create table fifo_roles (
    optype_id       smallint not null,
    snd_optype_id   smallint not null,
    rcv_optype_id   smallint not null,
    role            char(1) character set ascii not null,
    customers_only  smallint default 0 not null,
    primary key (optype_id, snd_optype_id, rcv_optype_id, role)
);
insert into fifo_roles values (1000, 1000, 1200, 'P', 0);  -- demand waiting for a supplier order
insert into fifo_roles values (1000, 1000, 3300, 'P', 1);  -- demand waiting for a reserve
insert into fifo_roles values (1200, 1000, 1200, 'T', 0);
insert into fifo_roles values (1200, 1200, 2000, 'P', 0);  -- ordered, waiting for the invoice
insert into fifo_roles values (2000, 1200, 2000, 'T', 0);
insert into fifo_roles values (2100, 1200, 2000, 'T', 0);
insert into fifo_roles values (2100, 2100, 3300, 'P', 0);  -- in stock, waiting for a reserve
insert into fifo_roles values (3300, 1000, 3300, 'T', 0);
insert into fifo_roles values (3300, 2100, 3300, 'T', 0);
insert into fifo_roles values (3400, 1000, 3300, 'T', 0);
insert into fifo_roles values (3400, 2100, 3300, 'T', 0);
commit;

create table ware_groups (
    id    integer not null primary key,
    name  varchar(40) character set ascii not null
);

create table wares (
    id              integer not null primary key,
    group_id        integer not null,
    name            varchar(60) character set ascii not null,
    price_purchase  numeric(18, 2) not null,
    price_retail    numeric(18, 2) not null
);

-- Agent 1 is our firm; then customers; then suppliers (ids in that order, see load.sql).
create table agents (
    id           integer not null primary key,
    name         varchar(60) character set ascii not null,
    is_our_firm  smallint default 0 not null,
    is_customer  smallint default 0 not null,
    is_supplier  smallint default 0 not null
);

create sequence doc_seq;
create sequence line_seq;
create sequence fifo_seq;
create sequence money_seq;
create sequence log_seq;
create sequence service_ticket;  -- strictly increasing across attachments: orders service runs

-- WORKER_ID: the stream of documents an attachment works on (workload.toml, workers).
create table doc_list (
    id             bigint not null primary key,
    optype_id      smallint not null,
    agent_id       integer not null,
    state_id       smallint not null,
    base_doc_id    bigint,                      -- the document this one was made from, if any
    worker_id      integer not null,
    cost_purchase  numeric(18, 2) default 0 not null,
    cost_retail    numeric(18, 2) default 0 not null,
    created_at     timestamp default current_timestamp not null
);
-- Picking a document to work on: a random starting id, then the next one of the wanted kind.
create index doc_list_pick on doc_list (worker_id, optype_id, state_id, id);

create table doc_data (
    id             bigint not null primary key,
    doc_id         bigint not null references doc_list (id) on delete cascade,
    ware_id        integer not null,
    qty            integer not null,
    cost_purchase  numeric(18, 2) not null,
    cost_retail    numeric(18, 2) not null,
    constraint doc_data_ware unique (doc_id, ware_id)
);

create table qdistr (
    id             bigint not null primary key,
    worker_id      integer not null,
    ware_id        integer not null,
    snd_optype_id  smallint not null,
    rcv_optype_id  smallint not null,
    snd_id         bigint not null               -- the producing line
);
-- FIFO: the oldest free rows of a ware for a step; also the next ware that has any.
create index qdistr_pick on qdistr (worker_id, snd_optype_id, rcv_optype_id, ware_id, id);
create index qdistr_snd on qdistr (snd_id);

create table qstorned (
    id             bigint not null primary key,
    worker_id      integer not null,
    ware_id        integer not null,
    snd_optype_id  smallint not null,
    rcv_optype_id  smallint not null,
    snd_id         bigint not null,
    rcv_id         bigint not null               -- the line that took the row
);
create index qstorned_snd on qstorned (snd_id);
create index qstorned_rcv on qstorned (rcv_id);

create table pdistr (
    id             bigint not null primary key,
    worker_id      integer not null,
    agent_id       integer not null,
    snd_optype_id  smallint not null,
    rcv_optype_id  smallint not null,
    snd_id         bigint not null,              -- the document that owes
    cost           numeric(18, 2) not null
);
create index pdistr_snd on pdistr (snd_id);

create table pstorned (
    id             bigint not null primary key,
    worker_id      integer not null,
    agent_id       integer not null,
    snd_optype_id  smallint not null,
    rcv_optype_id  smallint not null,
    snd_id         bigint not null,
    rcv_id         bigint not null,              -- the payment that took the row
    cost           numeric(18, 2) not null
);
create index pstorned_snd on pstorned (snd_id);
create index pstorned_rcv on pstorned (rcv_id);

-- Turnover logs. The business units only insert into *_TURNOVER_LOG; the service unit adds
-- those rows to the balances and moves them to *_TURNOVER_AGGREGATED in the same snapshot
-- transaction. The whole log is the union of the two; a balance equals the aggregated part.
create table invnt_turnover_log (
    id             bigint not null primary key,
    ware_id        integer not null,
    doc_id         bigint not null,
    line_id        bigint not null,
    optype_id      smallint not null,
    qty_diff       integer not null,
    cost_diff      numeric(18, 2) not null       -- purchase cost of qty_diff
);

create table invnt_turnover_aggregated (
    id             bigint not null primary key,
    ware_id        integer not null,
    doc_id         bigint not null,
    line_id        bigint not null,
    optype_id      smallint not null,
    qty_diff       integer not null,
    cost_diff      numeric(18, 2) not null
);

create table invnt_saldo (
    ware_id   integer not null primary key,
    qty_clo   bigint default 0 not null,
    qty_clr   bigint default 0 not null,
    qty_ord   bigint default 0 not null,
    qty_sup   bigint default 0 not null,
    qty_avl   bigint default 0 not null,
    qty_res   bigint default 0 not null,
    qty_inc   bigint default 0 not null,
    qty_out   bigint default 0 not null,
    cost_inc  numeric(18, 2) default 0 not null,
    cost_out  numeric(18, 2) default 0 not null
);

create table money_turnover_log (
    id         bigint not null primary key,
    agent_id   integer not null,
    doc_id     bigint not null,
    optype_id  smallint not null,
    cost_diff  numeric(18, 2) not null
);

create table money_turnover_aggregated (
    id         bigint not null primary key,
    agent_id   integer not null,
    doc_id     bigint not null,
    optype_id  smallint not null,
    cost_diff  numeric(18, 2) not null
);

create table money_saldo (
    agent_id   integer not null primary key,
    supp_debt  numeric(18, 2) default 0 not null,
    cust_debt  numeric(18, 2) default 0 not null
);

-- One row per service unit: taken NO WAIT by the service unit, held until it ends.
create table semaphores (
    name  varchar(31) character set ascii not null primary key,
    runs  bigint default 0 not null
);
insert into semaphores (name) values ('invnt_saldo');
insert into semaphores (name) values ('money_saldo');

-- Every committed service run with its tickets from SERVICE_TICKET, taken after the semaphore
-- and just before the end: two runs of one unit overlapped iff their ticket ranges interleave.
create table service_runs (
    id               bigint not null primary key,
    unit_name        varchar(31) character set ascii not null,
    attachment_id    bigint not null,
    started_ticket   bigint not null,
    finished_ticket  bigint not null,
    started_at       timestamp not null,
    finished_at      timestamp not null,
    log_rows         integer not null
);
commit;

-- Every stock movement with the multipliers of its operation type applied: the log rows not
-- aggregated yet (AGGREGATED = 0) and those the service units added to the balances (1).
-- (The checks sum such rows in one grouped pass; joining grouped views instead would make
-- Firebird recompute the inner one for every row of the outer.)
create view invnt_moves (ware_id, aggregated, qty_clo, qty_clr, qty_ord, qty_sup, qty_avl, qty_res, qty_inc, qty_out, cost_inc, cost_out) as
  select l.ware_id, 0, l.qty_diff * o.m_qty_clo, l.qty_diff * o.m_qty_clr, l.qty_diff * o.m_qty_ord,
         l.qty_diff * o.m_qty_sup, l.qty_diff * o.m_qty_avl, l.qty_diff * o.m_qty_res, l.qty_diff * o.m_qty_inc,
         l.qty_diff * o.m_qty_out, l.cost_diff * o.m_cost_inc, l.cost_diff * o.m_cost_out
  from invnt_turnover_log l join optypes o on o.id = l.optype_id
  union all
  select l.ware_id, 1, l.qty_diff * o.m_qty_clo, l.qty_diff * o.m_qty_clr, l.qty_diff * o.m_qty_ord,
         l.qty_diff * o.m_qty_sup, l.qty_diff * o.m_qty_avl, l.qty_diff * o.m_qty_res, l.qty_diff * o.m_qty_inc,
         l.qty_diff * o.m_qty_out, l.cost_diff * o.m_cost_inc, l.cost_diff * o.m_cost_out
  from invnt_turnover_aggregated l join optypes o on o.id = l.optype_id;

-- The balances as they are now: the aggregated balance plus the moves not aggregated yet.
-- Correct whether or not a service unit ran last.
create view invnt_balance (ware_id, qty_clo, qty_clr, qty_ord, qty_sup, qty_avl, qty_res, qty_inc, qty_out, cost_inc, cost_out) as
  select b.ware_id, sum(b.qty_clo), sum(b.qty_clr), sum(b.qty_ord), sum(b.qty_sup), sum(b.qty_avl), sum(b.qty_res),
         sum(b.qty_inc), sum(b.qty_out), sum(b.cost_inc), sum(b.cost_out)
  from (select ware_id, qty_clo, qty_clr, qty_ord, qty_sup, qty_avl, qty_res, qty_inc, qty_out, cost_inc, cost_out from invnt_saldo
        union all
        select ware_id, qty_clo, qty_clr, qty_ord, qty_sup, qty_avl, qty_res, qty_inc, qty_out, cost_inc, cost_out from invnt_moves where aggregated = 0) b
  group by b.ware_id;

-- What every line of a document that is not cancelled moved, by each step its type went
-- through (optype_steps). A refused order keeps its quantity as refused (optype CLR, cancelled).
create view invnt_document_moves (ware_id, qty_clo, qty_clr, qty_ord, qty_sup, qty_avl, qty_res, qty_inc, qty_out, cost_inc, cost_out) as
  select l.ware_id, l.qty * o.m_qty_clo, l.qty * o.m_qty_clr, l.qty * o.m_qty_ord, l.qty * o.m_qty_sup,
         l.qty * o.m_qty_avl, l.qty * o.m_qty_res, l.qty * o.m_qty_inc, l.qty * o.m_qty_out,
         l.cost_purchase * o.m_cost_inc, l.cost_purchase * o.m_cost_out
  from doc_list d
  join doc_data l on l.doc_id = d.id
  join optype_steps s on s.doc_optype_id = d.optype_id
  join optypes o on o.id = s.step_optype_id
  where d.state_id <> 2030 or d.optype_id = 1100;

create view money_moves (agent_id, aggregated, supp_debt, cust_debt) as
  select l.agent_id, 0, l.cost_diff * o.m_supp_debt, l.cost_diff * o.m_cust_debt
  from money_turnover_log l join optypes o on o.id = l.optype_id
  union all
  select l.agent_id, 1, l.cost_diff * o.m_supp_debt, l.cost_diff * o.m_cust_debt
  from money_turnover_aggregated l join optypes o on o.id = l.optype_id;

create view money_balance (agent_id, supp_debt, cust_debt) as
  select b.agent_id, sum(b.supp_debt), sum(b.cust_debt)
  from (select agent_id, supp_debt, cust_debt from money_saldo
        union all
        select agent_id, supp_debt, cust_debt from money_moves where aggregated = 0) b
  group by b.agent_id;
commit;

-- A unit that finds nothing to work on (no document in the wanted state, no free row) ends
-- with this exception: a by-design rollback (rollback_on), not a failure.
create exception docflow_nothing_to_do 'docflow: nothing to work on';
-- A service unit whose semaphore another attachment holds: a by-design rollback.
create exception docflow_service_busy 'docflow: another attachment is running this service unit';
-- Raised and caught inside a procedure: this candidate document cannot be cancelled (a later
-- document took some of its rows); its changes are undone and the next candidate is tried.
create exception docflow_not_eligible 'docflow: the document cannot be changed';
-- A row the model guarantees is missing: the database is inconsistent (an error, never by design).
create exception docflow_missing 'docflow: data missing';
commit;

/*
 * Read speed: two tables of the same rows, one read by a full natural scan, the other through
 * an index range scan, each first cold and then warm. Two tables, so that the second one's
 * first scan is cold too: a scan of the first would already have brought its pages into
 * Firebird's cache (and the OS's).
 *
 * K is spread over the whole table (a permutation of the ids), so the index range scan visits
 * pages in an order the natural one does not. Every value follows from the id: no RAND().
 */

create table scan_natural (
    id   integer not null,
    k    integer not null,
    pad  varchar(160) character set ascii not null,
    constraint scan_natural_pk primary key (id)
);

create table scan_keyed (
    id   integer not null,
    k    integer not null,
    pad  varchar(160) character set ascii not null,
    constraint scan_keyed_pk primary key (id)
);

/*
 * This attachment's own page reads and fetches (MON$IO_STATS), and the page size: a unit reads
 * them before and after its scan, each in a transaction of its own (a MON$ snapshot lasts as
 * long as its transaction), so the tallies add up to what the scan itself read.
 */
create view scan_my_io (page_reads, page_fetches, page_size) as
select io.mon$page_reads, io.mon$page_fetches, d.mon$page_size
from mon$attachments a
join mon$io_stats io on io.mon$stat_id = a.mon$stat_id
cross join mon$database d
where a.mon$attachment_id = current_connection;

set term ^ ;

-- Rows (p_chunk - 1) * 10000 + 1 .. min(p_chunk * 10000, p_rows) of both tables.
create procedure scan_load (p_chunk integer, p_rows integer)
as
  declare id integer;
  declare last_id integer;
  declare k integer;
begin
  id = (p_chunk - 1) * 10000 + 1;
  last_id = minvalue(p_chunk * 10000, p_rows);
  while (id <= last_id) do
  begin
    -- 48271 is a primitive root of the prime 2147483647: id -> k is one-to-one and scattered.
    k = mod(cast(id as bigint) * 48271, 2147483647);
    insert into scan_natural (id, k, pad)
    values (:id, :k, rpad('row ' || :id || ' ', 150, 'abcdefghijklmnopqrstuvwxyz0123456789'));
    insert into scan_keyed (id, k, pad)
    values (:id, :k, rpad('row ' || :id || ' ', 150, 'abcdefghijklmnopqrstuvwxyz0123456789'));
    id = id + 1;
  end
end^

set term ; ^

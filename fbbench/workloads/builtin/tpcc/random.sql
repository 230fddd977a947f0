/*
 * Deterministic pseudo-random numbers for PSQL, and the TPC-C name and string helpers.
 *
 * Why not RAND(): every random choice a procedure makes must follow from the parameters the
 * client passed (a seed() among them). Under Firebird 4+ read consistency, a statement that
 * meets a concurrently updated row is undone and restarted with a fresh snapshot; a procedure
 * that drew new random ids on every execution would touch different rows on every restart and
 * could run into "unable to get a stable set of rows in the source tables". Seeded, a restart
 * repeats exactly the same work, and the same seed always gives the same database.
 *
 * The generator is Park and Miller's "minimal standard" (Lehmer) generator with multiplier
 * 48271: x' = mod(x * 48271, 2147483647), state x in 1 .. 2147483646. The product stays below
 * 2^47, so BIGINT arithmetic never overflows, and the period is the full 2^31 - 2.
 *
 * Convention used in every procedure (inlined, because a PSQL function call costs about 1 µs,
 * many times the arithmetic itself, and the loaders draw millions of numbers):
 *
 *     x = mod(x * 48271, 2147483647);        -- next state
 *     v = lo + (x - 1) * n / 2147483646;     -- uniform in lo .. lo + n - 1 (n values)
 *
 * (x - 1) * n / 2147483646 scales the state down (integer division), using its high-order
 * part; the product stays below 2^52 for any n used here.
 */

set term ^ ;

-- The first state for a seed and a stream number: different streams (a warehouse, a district)
-- give unrelated sequences for the same seed. A few steps spread nearby starting points apart.
create function tpcc_rand_init (p_seed bigint, p_stream bigint)
returns bigint
as
  declare x bigint;
  declare i integer = 0;
begin
  x = mod(abs(mod(p_seed, 2147483646)) + abs(mod(p_stream, 2147483646)), 2147483646) + 1;
  while (i < 4) do
  begin
    x = mod(x * 48271, 2147483647);
    i = i + 1;
  end
  return x;
end^

-- C_LAST from a number 0 .. 999: three syllables, the digits of the number (clause 4.3.2.3).
create function tpcc_last_name (p_number integer)
returns varchar(16) character set ascii
as
begin
  return decode(p_number / 100, 0, 'BAR', 1, 'OUGHT', 2, 'ABLE', 3, 'PRI', 4, 'PRES',
                                5, 'ESE', 6, 'ANTI', 7, 'CALLY', 8, 'ATION', 9, 'EING')
      || decode(mod(p_number / 10, 10), 0, 'BAR', 1, 'OUGHT', 2, 'ABLE', 3, 'PRI', 4, 'PRES',
                                        5, 'ESE', 6, 'ANTI', 7, 'CALLY', 8, 'ATION', 9, 'EING')
      || decode(mod(p_number, 10), 0, 'BAR', 1, 'OUGHT', 2, 'ABLE', 3, 'PRI', 4, 'PRES',
                                   5, 'ESE', 6, 'ANTI', 7, 'CALLY', 8, 'ATION', 9, 'EING');
end^

/*
 * 2048 random alphanumeric characters. The loaders cut every random a-string (clause 4.3.2.2)
 * out of such a pool at a random offset and a random length instead of drawing each character:
 * drawing 40 million characters one by one in PSQL would dominate the population time, while
 * the resulting rows have the same lengths, the same character distribution and the same lack
 * of runs for Firebird's record compression. Each loader call builds its own pool from its seed.
 */
create function tpcc_alnum_pool (p_state bigint)
returns varchar(2048) character set ascii
as
  declare alphabet varchar(62) character set ascii =
    'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  declare pool varchar(2048) character set ascii = '';
  declare x bigint;
begin
  x = p_state;
  while (char_length(pool) < 2048) do
  begin
    x = mod(x * 48271, 2147483647);
    pool = pool || substring(alphabet from 1 + (x - 1) * 62 / 2147483646 for 1);
  end
  return pool;
end^

set term ; ^

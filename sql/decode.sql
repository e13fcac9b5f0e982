-- snowflake_decode, snowflake_timestamp, snowflake_compose and the ID range
-- of a millisecond, on fixed values (default layout and epoch).
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';
SET datestyle = 'ISO';
\set SHOW_CONTEXT never

-- A Twitter-era ID decodes as Twitter's own decoder does: ms = (id >> 22) + 1288834974657.
SELECT * FROM snowflake_decode(1541815603606036480);
SELECT snowflake_timestamp(1541815603606036480);
SELECT to_timestamp(((1541815603606036480 >> 22) + 1288834974657) / 1000.0)
       = snowflake_timestamp(1541815603606036480) AS matches_reference;

-- Every field at its limits.
SELECT * FROM snowflake_decode(0);
SELECT * FROM snowflake_decode(9223372036854775807);
SELECT * FROM snowflake_decode((1::bigint << 22) | (31 << 17) | (0 << 12) | 4095);
SELECT snowflake_decode(NULL) IS NULL AS null_in_null_out;

-- The record has exactly these columns.
SELECT (snowflake_decode(1541815603606036480)).ts,
       (snowflake_decode(1541815603606036480)).datacenter_id,
       (snowflake_decode(1541815603606036480)).worker_id,
       (snowflake_decode(1541815603606036480)).sequence;

-- compose is decode's inverse.
SELECT snowflake_compose('2022-06-28 16:07:40.105+00', 0, 9, 0);
SELECT snowflake_compose(ts, datacenter_id, worker_id, sequence) = 1541815603606036480 AS round_trip
  FROM snowflake_decode(1541815603606036480);
SELECT snowflake_compose('2010-11-04 01:42:54.657+00', 0, 0, 0) AS smallest,
       snowflake_compose('2080-07-10 17:30:30.208+00', 31, 31, 4095) AS largest;
SELECT count(*) AS mismatches
  FROM generate_series(1, 2000) g,
       LATERAL (SELECT (g::bigint * 7919 * 1000003) % (1::bigint << 62) AS id) i,
       LATERAL snowflake_decode(i.id) d
 WHERE snowflake_compose(d.ts, d.datacenter_id, d.worker_id, d.sequence) <> i.id;

-- The ID range of one millisecond.
SELECT snowflake_min_id('2026-11-22 10:00:00.123+00') AS min_id,
       snowflake_max_id('2026-11-22 10:00:00.123+00') AS max_id,
       snowflake_max_id('2026-11-22 10:00:00.123+00') - snowflake_min_id('2026-11-22 10:00:00.123+00') + 1 AS ids_per_ms;
SELECT snowflake_min_id('2026-11-22 10:00:00.1239+00') = snowflake_min_id('2026-11-22 10:00:00.123+00') AS same_millisecond;
SELECT snowflake_min_id('2026-11-22 10:00:00.124+00') = snowflake_max_id('2026-11-22 10:00:00.123+00') + 1 AS adjacent;
SELECT snowflake_timestamp(snowflake_max_id('2026-11-22 10:00:00.123+00'));

-- Bad input: a clear error with its SQLSTATE.
SELECT * FROM snowflake_decode(-1);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_timestamp(-9223372036854775808);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_compose('2026-01-01+00', 32, 0, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_compose('2026-01-01+00', 0, -1, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_compose('2026-01-01+00', 0, 0, 4096);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_compose('2010-11-04 01:42:54.656+00', 0, 0, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_compose('2080-07-10 17:30:30.209+00', 0, 0, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_min_id('infinity');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_max_id('-infinity');
\echo :LAST_ERROR_SQLSTATE

-- "Rows created between a and b" from the primary key alone.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';
SET datestyle = 'ISO';

-- A table of IDs issued by three nodes over one day, one every ~9 s.
CREATE TABLE events (id bigint PRIMARY KEY, payload text);
INSERT INTO events
SELECT snowflake_compose(timestamptz '2026-11-21 00:00:00+00' + g * interval '8.64 s', 0, g % 3, g % 4096),
       repeat('x', 50)
  FROM generate_series(0, 9999) g;
VACUUM ANALYZE events;

-- One hour of it: exactly the rows whose IDs carry a time in that hour.
SELECT count(*) AS rows_in_hour
  FROM events
 WHERE id BETWEEN snowflake_min_id('2026-11-21 10:00:00+00') AND snowflake_max_id('2026-11-21 10:59:59.999+00');
SELECT count(*) AS rows_by_decoding
  FROM events
 WHERE snowflake_timestamp(id) >= '2026-11-21 10:00:00+00' AND snowflake_timestamp(id) < '2026-11-21 11:00:00+00';

-- The plan uses the primary key, and no other index exists.
EXPLAIN (COSTS OFF)
SELECT id FROM events
 WHERE id BETWEEN snowflake_min_id('2026-11-21 10:00:00+00') AND snowflake_max_id('2026-11-21 10:59:59.999+00');
EXPLAIN (COSTS OFF)
SELECT * FROM events
 WHERE id BETWEEN snowflake_min_id('2026-11-21 10:00:00+00') AND snowflake_max_id('2026-11-21 10:00:59.999+00');
SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'events'::regclass;

-- Time order is ID order.
SELECT bool_and(snowflake_timestamp(id) >= snowflake_timestamp(prev)) AS time_ordered
  FROM (SELECT id, lag(id) OVER (ORDER BY id) AS prev FROM events) s;
DROP TABLE events;

-- The IDs an interval spans, for partitions by ID one interval wide.
SELECT snowflake_id_span('1 day') = 86400000::bigint << 22 AS one_day,
       snowflake_id_span('1 hour') * 24 = snowflake_id_span('1 day') AS hours,
       snowflake_id_span('0') AS nothing;
SELECT snowflake_id_span('-1 day');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_id_span('300000 years');
\echo :LAST_ERROR_SQLSTATE

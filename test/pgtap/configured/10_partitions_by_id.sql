-- Time partitions keyed by the ID, the recipes of doc/clients.md ("Time
-- partitions"): native range partitions of a month each, pruned by time and
-- dropped by time, and pg_partman's partitions of a day each with retention,
-- on each major (pg_partman 4.7 on 15, 5.x on 17 and 18: create_parent's
-- p_type differs); no created_at column anywhere. snowflake_id_span(), the
-- helper the recipes use, first.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS snowflake;
SELECT plan(19);
SET LOCAL TimeZone = 'UTC';

-- snowflake_id_span(interval)
SELECT is(pg_get_function_result('snowflake_id_span(interval)'::regprocedure), 'bigint', 'snowflake_id_span(interval) returns bigint');
SELECT ok(provolatile = 'i' AND proisstrict AND proparallel = 's', 'snowflake_id_span is IMMUTABLE, STRICT, PARALLEL SAFE')
  FROM pg_proc WHERE oid = 'snowflake_id_span(interval)'::regprocedure;
SELECT isnt(obj_description('snowflake_id_span(interval)'::regprocedure, 'pg_proc'), NULL, 'snowflake_id_span has a comment');
SELECT is(snowflake_id_span('1 day'), 86400000::bigint << 22, 'one day spans 86400000 << 22 IDs in the default layout');
SELECT is(snowflake_id_span('1 day'), snowflake_min_id('2026-11-25 00:00+00') - snowflake_min_id('2026-11-24 00:00+00'),
          'one day spans the IDs between two midnights');
SELECT is(snowflake_id_span('1 month'), snowflake_id_span('30 days'), 'a month counts 30 days');

-- Native partitions, one a month.
CREATE TEMP TABLE months AS
SELECT date_trunc('month', now()) + n * interval '1 month' AS month FROM generate_series(-3, 2) AS n;
CREATE FUNCTION pg_temp.partition_of(month timestamptz) RETURNS text LANGUAGE sql
AS $$ SELECT 'events_' || to_char(month, 'YYYY_MM') $$;
CREATE FUNCTION pg_temp.lower_bound(partition regclass) RETURNS bigint LANGUAGE sql
AS $$ SELECT substring(pg_get_expr(relpartbound, oid) FROM 'FROM \(''?(\d+)''?\)')::bigint FROM pg_class WHERE oid = partition $$;
CREATE FUNCTION pg_temp.partitions(parent regclass) RETURNS SETOF regclass LANGUAGE sql
AS $$ SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = parent AND pg_temp.lower_bound(inhrelid) IS NOT NULL
      ORDER BY pg_temp.lower_bound(inhrelid) $$;
CREATE FUNCTION pg_temp.plan_of(query text) RETURNS SETOF text LANGUAGE plpgsql
AS $$ BEGIN RETURN QUERY EXECUTE 'EXPLAIN (COSTS OFF) ' || query; END $$;

-- guide: begin native-table
CREATE TABLE events (
    id      bigint NOT NULL DEFAULT snowflake_nextval(),
    payload text,
    PRIMARY KEY (id)
) PARTITION BY RANGE (id);
-- guide: end

-- The months before this one, as a table that has been running for a while has them.
SELECT format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%s) TO (%s)', pg_temp.partition_of(month),
              snowflake_min_id(month), snowflake_min_id(month + interval '1 month'))
  FROM months WHERE month < date_trunc('month', now()) \gexec

-- guide: begin native-partitions
-- This month's partition and the next two (run it monthly: cron, pg_cron)
DO $$
DECLARE
    month timestamptz;
BEGIN
    FOR month IN SELECT generate_series(date_trunc('month', now()),
                                        date_trunc('month', now()) + interval '2 months',
                                        interval '1 month')
    LOOP
        EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF events FOR VALUES FROM (%s) TO (%s)',
                       'events_' || to_char(month, 'YYYY_MM'),
                       snowflake_min_id(month),
                       snowflake_min_id(month + interval '1 month'));
    END LOOP;
END
$$;
-- guide: end

SELECT is((SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass), 6::bigint,
          'six monthly partitions: three past, this one, two ahead');
-- A row of the middle of each month, and one issued now.
INSERT INTO events (id, payload)
SELECT snowflake_compose(month + interval '14 days', 3, 7, 0), pg_temp.partition_of(month) FROM months;
INSERT INTO events (payload) VALUES (pg_temp.partition_of(now()));
SELECT is((SELECT count(*) FROM events WHERE tableoid::regclass::text <> payload), 0::bigint,
          'each row is in the partition of the month it was issued in');
SELECT is((SELECT string_agg(line, ' ') ~ ('Scan.* on ' || pg_temp.partition_of(now()) || ' ')
                  AND string_agg(line, ' ') !~ pg_temp.partition_of(now() - interval '1 month')
             FROM pg_temp.plan_of($$SELECT * FROM events WHERE id >= snowflake_min_id(date_trunc('month', now()))
                                                        AND id < snowflake_min_id(date_trunc('month', now()) + interval '1 month')$$) AS line),
          true, 'a query by this month''s ID range scans this month''s partition only');

-- guide: begin native-retention
-- Drop the month that is now three months old, and its rows with it
DO $$
BEGIN
    EXECUTE format('DROP TABLE IF EXISTS %I',
                   'events_' || to_char(date_trunc('month', now()) - interval '3 months', 'YYYY_MM'));
END
$$;
-- guide: end
SELECT is((SELECT array_agg(payload ORDER BY payload) FROM events),
          (SELECT array_agg(partition ORDER BY partition) FROM (
               SELECT pg_temp.partition_of(month) FROM months WHERE month >= date_trunc('month', now()) - interval '2 months'
               UNION ALL SELECT pg_temp.partition_of(now())) AS kept(partition)),
          'the rows of three months ago are gone with their partition, the others stay');
SELECT is((SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass), 5::bigint, 'five partitions left');

-- pg_partman: partitions of one day of IDs each, and retention by time.
CREATE SCHEMA partman;
CREATE EXTENSION pg_partman SCHEMA partman;
SELECT extversion LIKE '4.%' AS partman_4 FROM pg_extension WHERE extname = 'pg_partman' \gset

-- guide: begin partman-table
CREATE TABLE measurements (
    id    bigint NOT NULL DEFAULT snowflake_nextval(),
    value double precision,
    PRIMARY KEY (id)
) PARTITION BY RANGE (id);
-- guide: end

\o /dev/null
\if :partman_4
-- guide: begin partman-4
SELECT partman.create_parent(
    p_parent_table    := 'public.measurements',
    p_control         := 'id',
    p_type            := 'native',
    p_interval        := snowflake_id_span('1 day')::text,
    p_start_partition := snowflake_min_id(now() - interval '7 days')::text,
    p_premake         := 10);
-- guide: end
\else
-- guide: begin partman-5
SELECT partman.create_parent(
    p_parent_table    := 'public.measurements',
    p_control         := 'id',
    p_interval        := snowflake_id_span('1 day')::text,
    p_start_partition := snowflake_min_id(now() - interval '7 days')::text,
    p_premake         := 10);
-- guide: end
\endif
\o

SELECT ok(snowflake_timestamp(pg_temp.lower_bound(oldest)) BETWEEN now() - interval '8 days' AND now() - interval '7 days',
          'pg_partman''s first partition starts a week ago, aligned to its day')
  FROM pg_temp.partitions('measurements') AS oldest LIMIT 1;
SELECT ok(snowflake_timestamp(pg_temp.lower_bound(newest)) > now(), 'and its partitions run ahead of now')
  FROM pg_temp.partitions('measurements') AS newest ORDER BY pg_temp.lower_bound(newest) DESC LIMIT 1;
INSERT INTO measurements (id, value)
SELECT snowflake_compose(now() - days * interval '1 day', 3, 7, 0), days FROM generate_series(6, 1, -1) AS days;
INSERT INTO measurements (value) VALUES (0);
SELECT is((SELECT count(DISTINCT tableoid) FROM measurements), 7::bigint, 'each day''s rows are in a partition of their own');
\if :partman_4
SELECT is((SELECT count(*) FROM ONLY partman.template_public_measurements), 0::bigint, 'none is in the template');
\else
SELECT pass('pg_partman 5 keeps no template table');
\endif
SELECT is((SELECT count(*) FROM measurements_default), 0::bigint, 'none is in the default partition');
SELECT is(array_agg(DISTINCT snowflake_timestamp(pg_temp.lower_bound(next)) - snowflake_timestamp(pg_temp.lower_bound(partition))),
          ARRAY[interval '1 day'], 'each partition spans one day')
  FROM (SELECT partition, lead(partition) OVER (ORDER BY pg_temp.lower_bound(partition)) AS next
          FROM pg_temp.partitions('measurements') AS partition) AS pairs
 WHERE next IS NOT NULL;

\o /dev/null
-- guide: begin partman-retention
UPDATE partman.part_config
   SET retention = snowflake_id_span('3 days')::text, retention_keep_table = false
 WHERE parent_table = 'public.measurements';
SELECT partman.run_maintenance('public.measurements');  -- as its background worker or pg_cron would
-- guide: end
\o
SELECT is((SELECT array_agg(value ORDER BY id) FROM measurements), ARRAY[3, 2, 1, 0]::double precision[],
          'retention dropped the partitions of the days more than three days before the newest ID, and their rows');
SELECT ok(snowflake_timestamp(pg_temp.lower_bound(oldest)) BETWEEN now() - interval '4 days' AND now() - interval '3 days',
          'and their partitions: the oldest left starts between four and three days ago')
  FROM pg_temp.partitions('measurements') AS oldest LIMIT 1;

SELECT * FROM finish();
ROLLBACK;

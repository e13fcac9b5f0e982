-- The Markdown report of the benchmark suite, from the bench.* tables that
-- run.sh filled. Run with psql -X -At; every row is one line of Markdown.
-- A measurement that did not run (the snowflake extension missing, say)
-- shows as "n/a", and its target as n/a, never as a pass.
\set ON_ERROR_STOP 1
\pset footer off

-- PostgreSQL's own uuidv7() exists from 18 on: its rows are shown where it
-- was measured, and left out (not n/a) where the server has none.
CREATE FUNCTION pg_temp.shown(scheme text) RETURNS bool LANGUAGE sql AS $$
    SELECT scheme NOT LIKE '%uuidv7' OR bench.fact('pg.uuidv7') = '1'
$$;

-- Medians of item 2 (one backend) and of items 3 (all backends together),
-- per function and number of backends.
CREATE TEMP VIEW sql_summary AS
WITH per_run AS (
    SELECT item, scheme, backends, rep,
           sum(rows) AS rows,
           max(finished) - min(started) AS wall_ms,
           sum(rows) / nullif(max(finished) - min(started), 0) * 1000 AS per_second,
           sum(rows) / 4096.0
             / nullif((max(max_id) >> 22) - (min(min_id) >> 22) + 1, 0) AS packing,
           min(max_lead) AS max_lead
      FROM bench.sql_runs
     GROUP BY item, scheme, backends, rep)
SELECT item, scheme, backends,
       count(*) AS runs,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY wall_ms) AS ms,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY per_second) AS per_second,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY packing) AS packing,
       max(rows) AS rows,
       min(max_lead) AS max_lead
  FROM per_run
 GROUP BY item, scheme, backends;

CREATE TEMP VIEW sql_schemes AS
SELECT * FROM (VALUES
    (1, 'floor', '`bench_floor()` (the floor)'),
    (2, 'random', '`random()`'),
    (3, 'sequence', '`nextval(''bench_seq'')`'),
    (4, 'uuid', '`gen_random_uuid()`'),
    (5, 'uuidv7', '`uuidv7()`'),
    (6, 'snowflake_lead1000', '`snowflake_nextval()`, max_lead = 1000'),
    (7, 'snowflake_lead0', '`snowflake_nextval()`, max_lead = 0')) AS v(ord, scheme, label)
 WHERE pg_temp.shown(scheme);

-- Item 2 with marginal costs: (time - floor's time) / rows, in ns. The
-- packing of max_lead = 0 comes from the packing runs.
CREATE TEMP VIEW sql_one AS
SELECT s.ord, s.scheme, s.label, m.ms, m.rows, p.packing, m.runs,
       m.ms * 1e6 / m.rows AS ns_per_row,
       (m.ms - f.ms) * 1e6 / m.rows AS marginal_ns,
       m.ms / f.ms AS vs_floor
  FROM sql_schemes s
  LEFT JOIN sql_summary m ON m.scheme = s.scheme AND m.item = 'one'
  LEFT JOIN sql_summary f ON f.scheme = 'floor' AND f.item = 'one'
  LEFT JOIN sql_summary p ON p.scheme = 'packing_lead0' AND p.item = 'one'
                         AND s.scheme = 'snowflake_lead0';

CREATE TEMP VIEW pgbench_schemes AS
SELECT * FROM (VALUES
    (1, 'select_floor', '`SELECT bench_floor()` (the floor)', 'select_sequence'),
    (2, 'select_sequence', '`SELECT nextval(''bench_seq'')`', 'select_sequence'),
    (3, 'select_uuid', '`SELECT gen_random_uuid()`', 'select_sequence'),
    (4, 'select_uuidv7', '`SELECT uuidv7()`', 'select_sequence'),
    (5, 'select_snowflake', '`SELECT snowflake_nextval()`', 'select_sequence'),
    (6, 'insert_bigserial', 'INSERT, `bigserial` key', 'insert_bigserial'),
    (7, 'insert_uuid', 'INSERT, `uuid DEFAULT gen_random_uuid()` key', 'insert_bigserial'),
    (8, 'insert_uuidv7', 'INSERT, `uuid DEFAULT uuidv7()` key', 'insert_bigserial'),
    (9, 'insert_snowflake', 'INSERT, `bigint DEFAULT snowflake_nextval()` key', 'insert_bigserial'))
    AS v(ord, scheme, label, baseline)
 WHERE pg_temp.shown(scheme);

CREATE TEMP VIEW pgbench_summary AS
WITH med AS (
    SELECT scheme, count(*) AS runs,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY tps) AS tps
      FROM bench.pgbench GROUP BY scheme)
SELECT s.ord, s.scheme, s.label, m.tps, m.runs, m.tps / b.tps AS vs_baseline, b.tps AS baseline_tps,
       s.baseline, l.p50_ms, l.p95_ms, l.p99_ms, l.transactions
  FROM pgbench_schemes s
  LEFT JOIN med m ON m.scheme = s.scheme
  LEFT JOIN med b ON b.scheme = s.baseline
  LEFT JOIN bench.pgbench_latency l ON l.scheme = s.scheme;

CREATE TEMP VIEW big_schemes AS
SELECT * FROM (VALUES
    (1, 'snowflake', '`bigint` = `snowflake_nextval()`', 'none: the key is time-ordered'),
    (2, 'bigserial', '`bigserial`', '`created_at` B-tree'),
    (3, 'uuid', '`uuid` = `gen_random_uuid()`', '`created_at` B-tree'),
    (4, 'uuidv7', '`uuid` = `uuidv7()`', 'none: the key is time-ordered'))
    AS v(ord, scheme, label, time_index)
 WHERE pg_temp.shown(scheme);

CREATE TEMP VIEW big_summary AS
SELECT s.ord, s.scheme, s.label, s.time_index,
       l.rows, l.seconds, l.wal_bytes, v.ms AS vacuum_ms,
       z.heap_bytes, z.pk_bytes, z.time_index_bytes, z.indexes_bytes, z.pk_leaf_density,
       k.us AS lookup_us, k.p95_us AS lookup_p95_us, r.ms AS range_ms, r.found,
       pl.shared_blocks AS lookup_blocks, pr.shared_blocks AS range_blocks,
       pl.indexes AS lookup_indexes, pr.indexes AS range_indexes
  FROM big_schemes s
  LEFT JOIN (SELECT scheme, sum(rows) AS rows, sum(ms) / 1000 AS seconds,
                    sum(wal_bytes) AS wal_bytes
               FROM bench.load GROUP BY scheme) l ON l.scheme = s.scheme
  LEFT JOIN bench.vacuum v ON v.scheme = s.scheme
  LEFT JOIN bench.sizes z ON z.scheme = s.scheme
  LEFT JOIN (SELECT scheme,
                    percentile_cont(0.5) WITHIN GROUP (ORDER BY us) AS us,
                    percentile_cont(0.95) WITHIN GROUP (ORDER BY us) AS p95_us
               FROM bench.lookups GROUP BY scheme) k ON k.scheme = s.scheme
  LEFT JOIN (SELECT scheme,
                    percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS ms,
                    max(found) AS found
               FROM bench.ranges GROUP BY scheme) r ON r.scheme = s.scheme
  LEFT JOIN bench.plans pl ON pl.scheme = s.scheme AND pl.query = 'lookup'
  LEFT JOIN bench.plans pr ON pr.scheme = s.scheme AND pr.query = 'range';

CREATE TEMP VIEW core_schemes (ord, name, clock, threads) AS VALUES
    (1, 'injected_advancing/real_time/threads:1',
        'injected: +1 ms every 4,000 calls, max_lead 0', 1),
    (2, 'injected_fixed_lead/real_time/threads:1',
        'injected: fixed, max_lead unbounded', 1),
    (3, 'injected_fixed_lead/real_time/threads:2',
        'injected: fixed, max_lead unbounded', 2),
    (4, 'real_clock/real_time/threads:1', 'real (`CLOCK_REALTIME`), max_lead 0, spinning', 1),
    (5, 'real_clock/real_time/threads:2', 'real (`CLOCK_REALTIME`), max_lead 0, spinning', 2),
    (6, 'real_clock_unbounded_lead/real_time/threads:1',
        'real, max_lead unbounded (the cap never binds)', 1),
    (7, 'clock_read/real_time/threads:1', 'the clock alone: one reading, no ID', 1),
    (8, 'base32_encode/real_time/threads:1', 'no clock, no ID: `base32::encode`, per call', 1),
    (9, 'public_id_encode/real_time/threads:1',
        'no clock, no ID: `public_id::encode` (FF1, AES-128, then base32), per call', 1),
    (10, 'public_id_decode/real_time/threads:1', 'no clock, no ID: `public_id::decode`, per call', 1);

-- Item 6: each repetition's marginal cost over the floor of the same
-- cluster and repetition (this tree's or the baseline's), and its medians.
CREATE TEMP VIEW release_runs AS
WITH t AS (
    SELECT item, scheme, rep, sum(rows) AS rows, max(finished) - min(started) AS ms
      FROM bench.sql_runs WHERE item IN ('release', 'decode')
     GROUP BY item, scheme, rep)
SELECT f.item, f.scheme, f.rep, (f.ms - fl.ms) * 1e6 / f.rows AS marginal_ns
  FROM t f
  JOIN t fl ON fl.item = f.item AND fl.rep = f.rep
           AND fl.scheme = CASE WHEN f.scheme LIKE '%baseline' THEN 'floor_baseline'
                                WHEN f.item = 'release' THEN 'floor_this' ELSE 'floor' END
 WHERE f.scheme NOT LIKE 'floor%';

CREATE TEMP VIEW release_schemes AS
SELECT * FROM (VALUES
    (1, 'release', 'nextval_baseline',
        format('`snowflake_nextval()`, max_lead = 1000: previous release, %s',
               coalesce(bench.fact('release.baseline'), 'n/a')), 'nextval_baseline'),
    (2, 'release', 'nextval_this', '`snowflake_nextval()`, max_lead = 1000: this tree',
        'nextval_baseline'),
    (3, 'release', 'generate_baseline',
        format('`snowflake_generate(n)`, max_lead = 1000: previous release, %s',
               coalesce(bench.fact('release.baseline'), 'n/a')), 'generate_baseline'),
    (4, 'release', 'generate_this', '`snowflake_generate(n)`, max_lead = 1000: this tree',
        'generate_baseline'),
    (5, 'decode', 'decode', '`snowflake_decode(id)`', 'decode'),
    (6, 'decode', 'decode_preset', '`snowflake_decode(id, ''twitter'')`', 'decode'),
    (7, 'decode', 'decode_specification',
        '`snowflake_decode(id, ''time:41 datacenter:5 worker:5 sequence:12'')`', 'decode'),
    (8, 'decode', 'to_base32', '`snowflake_to_base32(id)`', 'to_base32'),
    (9, 'decode', 'base32_round_trip', '`snowflake_from_base32(snowflake_to_base32(id))`',
        'base32_round_trip'),
    (10, 'release', 'to_public_baseline',
        format('`snowflake_to_public(id)` (AES-128): previous release, %s',
               coalesce(bench.fact('release.baseline'), 'n/a')), 'to_public_baseline'),
    (11, 'release', 'to_public_this', '`snowflake_to_public(id)` (AES-128): this tree',
        'to_public_baseline'),
    (12, 'release', 'public_round_trip_baseline',
        format('`snowflake_from_public(snowflake_to_public(id))`: previous release, %s',
               coalesce(bench.fact('release.baseline'), 'n/a')), 'public_round_trip_baseline'),
    (13, 'release', 'public_round_trip_this',
        '`snowflake_from_public(snowflake_to_public(id))`: this tree', 'public_round_trip_baseline'))
    AS v(ord, item, scheme, label, baseline);

CREATE TEMP VIEW release_summary AS
WITH med AS (
    SELECT item, scheme, count(*) AS runs,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY marginal_ns) AS marginal_ns,
           percentile_cont(0.75) WITHIN GROUP (ORDER BY marginal_ns)
             - percentile_cont(0.25) WITHIN GROUP (ORDER BY marginal_ns) AS iqr_ns
      FROM release_runs GROUP BY item, scheme)
SELECT s.ord, s.scheme, s.label, m.runs, m.marginal_ns, m.iqr_ns,
       m.marginal_ns / b.marginal_ns AS vs_baseline, s.scheme = s.baseline AS is_baseline
  FROM release_schemes s
  LEFT JOIN med m ON m.item = s.item AND m.scheme = s.scheme
  LEFT JOIN med b ON b.item = s.item AND b.scheme = s.baseline;

-- Whether this tree's marginal cost of a scheme is within noise of the
-- previous release's: at most its median plus the larger interquartile
-- range. The figures, and the verdict (NULL: n/a).
CREATE FUNCTION pg_temp.within_noise(this_scheme text, before_scheme text,
                                     OUT measured text, OUT met boolean) LANGUAGE sql AS $$
    WITH t AS (SELECT * FROM release_summary WHERE scheme = this_scheme),
         b AS (SELECT * FROM release_summary WHERE scheme = before_scheme)
    SELECT format('%s ns vs %s ns: %s × (interquartile ranges %s and %s ns)',
                  bench.num((SELECT marginal_ns FROM t), 1), bench.num((SELECT marginal_ns FROM b), 1),
                  bench.num((SELECT vs_baseline FROM t), 3), bench.num((SELECT iqr_ns FROM t), 1),
                  bench.num((SELECT iqr_ns FROM b), 1)),
           (SELECT marginal_ns FROM t)
             <= (SELECT marginal_ns FROM b) + greatest((SELECT iqr_ns FROM t), (SELECT iqr_ns FROM b))
$$;

-- target: its text, the measured value, and whether it was met (NULL: n/a).
CREATE TEMP VIEW targets (ord, target, measured, met) AS
WITH one AS (SELECT * FROM sql_one),
     sf1000 AS (SELECT * FROM one WHERE scheme = 'snowflake_lead1000'),
     seq AS (SELECT * FROM one WHERE scheme = 'sequence'),
     p1 AS (SELECT packing FROM sql_summary WHERE item = 'one' AND scheme = 'packing_lead0'),
     p2 AS (SELECT packing FROM sql_summary WHERE item = 'many' AND backends = 2
                                              AND scheme = 'packing_lead0'),
     p4 AS (SELECT packing FROM sql_summary WHERE item = 'many' AND backends = 4
                                              AND scheme = 'packing_lead0'),
     ins AS (SELECT * FROM pgbench_summary WHERE scheme = 'insert_snowflake'),
     ins_uuid AS (SELECT * FROM pgbench_summary WHERE scheme = 'insert_uuid'),
     ins_uuidv7 AS (SELECT * FROM pgbench_summary WHERE scheme = 'insert_uuidv7'),
     uuidv7 AS (SELECT * FROM one WHERE scheme = 'uuidv7'),
     core AS (SELECT * FROM bench.core WHERE name = 'injected_advancing/real_time/threads:1'),
     generate_this AS (SELECT * FROM release_summary WHERE scheme = 'generate_this'),
     generate_previous AS (SELECT * FROM release_summary WHERE scheme = 'generate_baseline'),
     preset AS (SELECT * FROM release_summary WHERE scheme = 'decode_preset'),
     one_argument AS (SELECT * FROM release_summary WHERE scheme = 'decode'),
     to_public AS (SELECT * FROM release_summary WHERE scheme = 'to_public_this'),
     from_public AS (SELECT (SELECT marginal_ns FROM release_summary
                              WHERE scheme = 'public_round_trip_this')
                            - (SELECT marginal_ns FROM to_public) AS marginal_ns),
     shm AS (SELECT bench.fact('snowflake.shmem_bytes')::bigint AS bytes)
SELECT 1, 'marginal cost of `snowflake_nextval()` at max_lead = 1000 ≤ 0.2 × that of `nextval()`',
       format('%s ns vs %s ns: %s ×',
              bench.num((SELECT marginal_ns FROM sf1000), 1),
              bench.num((SELECT marginal_ns FROM seq), 1),
              bench.num((SELECT marginal_ns FROM sf1000) / (SELECT marginal_ns FROM seq), 3)),
       (SELECT marginal_ns FROM sf1000) <= 0.2 * (SELECT marginal_ns FROM seq)
UNION ALL
SELECT 2, 'packing at max_lead = 0, one backend ≥ 0.9',
       bench.num((SELECT packing FROM p1), 3), (SELECT packing FROM p1) >= 0.9
UNION ALL
SELECT 3, 'packing at max_lead = 0, 2 backends at once ≥ 0.9',
       bench.num((SELECT packing FROM p2), 3), (SELECT packing FROM p2) >= 0.9
UNION ALL
SELECT 4, 'packing at max_lead = 0, 4 backends at once ≥ 0.9',
       bench.num((SELECT packing FROM p4), 3), (SELECT packing FROM p4) >= 0.9
UNION ALL
SELECT 5, 'pgbench INSERT: tps ≥ 0.97 × `bigserial`',
       format('%s tps vs %s: %s ×', bench.num((SELECT tps FROM ins)),
              bench.num((SELECT baseline_tps FROM ins)),
              bench.num((SELECT vs_baseline FROM ins), 3)),
       (SELECT vs_baseline FROM ins) >= 0.97
UNION ALL
SELECT 6, 'pgbench INSERT: tps above `gen_random_uuid()`',
       format('%s tps vs %s: %s ×', bench.num((SELECT tps FROM ins)),
              bench.num((SELECT tps FROM ins_uuid)),
              bench.num((SELECT tps FROM ins) / (SELECT tps FROM ins_uuid), 3)),
       (SELECT tps FROM ins) > (SELECT tps FROM ins_uuid)
UNION ALL
SELECT 6.1, 'marginal cost of `snowflake_nextval()` at max_lead = 1000 below that of `uuidv7()`',
       format('%s ns vs %s ns: %s ×',
              bench.num((SELECT marginal_ns FROM sf1000), 1),
              bench.num((SELECT marginal_ns FROM uuidv7), 1),
              bench.num((SELECT marginal_ns FROM sf1000) / (SELECT marginal_ns FROM uuidv7), 3)),
       (SELECT marginal_ns FROM sf1000) < (SELECT marginal_ns FROM uuidv7)
 WHERE pg_temp.shown('uuidv7')
UNION ALL
SELECT 6.2, 'pgbench INSERT: tps above `uuidv7()`',
       format('%s tps vs %s: %s ×', bench.num((SELECT tps FROM ins)),
              bench.num((SELECT tps FROM ins_uuidv7)),
              bench.num((SELECT tps FROM ins) / (SELECT tps FROM ins_uuidv7), 3)),
       (SELECT tps FROM ins) > (SELECT tps FROM ins_uuidv7)
 WHERE pg_temp.shown('uuidv7')
UNION ALL
SELECT 7, 'core: < 20 ns per ID, injected clock, one thread',
       format('%s CPU ns (%s ns wall)', bench.num((SELECT cpu_ns_per_id FROM core), 1),
              bench.num(1e9 / (SELECT ids_per_second FROM core), 1)),
       (SELECT cpu_ns_per_id FROM core) < 20
UNION ALL
SELECT 8, 'shared memory of the generator < 1 KiB',
       format('`GeneratorState` %s B; in the server: %s',
              bench.num((SELECT state_bytes FROM core)),
              coalesce(bench.fact('snowflake.shmem'), 'n/a')),
       (SELECT state_bytes FROM core) < 1024 AND (SELECT bytes FROM shm) < 1024
UNION ALL
SELECT 9, 'no allocation per call',
       format('%s allocations per ID (core; 10,000 calls counted per benchmark)',
              bench.num((SELECT max(allocs_per_id) FROM bench.core), 3)),
       (SELECT max(allocs_per_id) FROM bench.core) = 0
UNION ALL
SELECT 10, 'marginal cost of `snowflake_nextval()` at max_lead = 1000 within noise of the '
           'previous release''s (at most its median plus the larger interquartile range)',
       w.measured, w.met FROM pg_temp.within_noise('nextval_this', 'nextval_baseline') w
UNION ALL
SELECT 10.1, 'marginal cost of `snowflake_generate(n)` at max_lead = 1000 within noise of the '
             'previous release''s (at most its median plus the larger interquartile range)',
       format('%s ns vs %s ns: %s × (interquartile ranges %s and %s ns)',
              bench.num((SELECT marginal_ns FROM generate_this), 1),
              bench.num((SELECT marginal_ns FROM generate_previous), 1),
              bench.num((SELECT vs_baseline FROM generate_this), 3),
              bench.num((SELECT iqr_ns FROM generate_this), 1),
              bench.num((SELECT iqr_ns FROM generate_previous), 1)),
       (SELECT marginal_ns FROM generate_this)
         <= (SELECT marginal_ns FROM generate_previous)
            + greatest((SELECT iqr_ns FROM generate_this), (SELECT iqr_ns FROM generate_previous))
UNION ALL
SELECT 11, '`snowflake_decode(id, ''twitter'')` ≤ 1.5 × `snowflake_decode(id)` (marginal cost)',
       format('%s ns vs %s ns: %s ×', bench.num((SELECT marginal_ns FROM preset), 1),
              bench.num((SELECT marginal_ns FROM one_argument), 1),
              bench.num((SELECT vs_baseline FROM preset), 3)),
       (SELECT vs_baseline FROM preset) <= 1.5
UNION ALL
SELECT 12, 'marginal cost of `snowflake_to_public(id)` ≤ 1 µs',
       format('%s ns', bench.num((SELECT marginal_ns FROM to_public), 1)),
       (SELECT marginal_ns FROM to_public) <= 1000
UNION ALL
SELECT 13, 'marginal cost of `snowflake_from_public(text)` ≤ 1 µs (the round trip less `snowflake_to_public`)',
       format('%s ns', bench.num((SELECT marginal_ns FROM from_public), 1)),
       (SELECT marginal_ns FROM from_public) <= 1000
UNION ALL
SELECT 14, 'marginal cost of `snowflake_to_public(id)` within noise of the previous release''s',
       w.measured, w.met FROM pg_temp.within_noise('to_public_this', 'to_public_baseline') w
UNION ALL
SELECT 15, 'marginal cost of `snowflake_from_public(snowflake_to_public(id))` within noise of the '
           'previous release''s',
       w.measured, w.met FROM pg_temp.within_noise('public_round_trip_this', 'public_round_trip_baseline') w;

-- The document ----------------------------------------------------------

-- "Load average as it started: x." for item n, if it ran.
CREATE FUNCTION pg_temp.load_line(n int) RETURNS text LANGUAGE sql AS $$
    SELECT CASE WHEN bench.fact('load.item' || n) IS NULL THEN 'Not run (`--only`).'
                ELSE format('Load average (1 min) as it started: %s.', bench.fact('load.item' || n))
           END
$$;

SELECT '# snowflake benchmarks';
SELECT '';
SELECT format('Generated by `%s` on %s, %s.', bench.fact('run.command'),
              bench.fact('run.date'), bench.fact('run.mode'));
SELECT format('The whole run took %s.', bench.fact('run.duration'));
SELECT format('Items run: %s (`--only`); the others show n/a.', bench.fact('run.items'))
 WHERE bench.fact('run.items') <> '1,2,3,4,5,6';
SELECT CASE WHEN bench.fact('run.quick') = '1' THEN
  E'\n**Smoke run (`--quick`): sizes too small for the figures to mean anything; '
  'it only shows that the suite works. Quote a full run.**' END
 WHERE bench.fact('run.quick') = '1';
SELECT format(E'\n**The machine was busy: the load average was %s when the run started '
              '(other work, or a run just before). Whatever competed for the CPUs shows in the '
              'figures; rerun on a quiet machine before quoting them.**',
              bench.fact('machine.load_at_start'))
 WHERE bench.fact('machine.load_at_start')::float8 > 1;
SELECT '';
SELECT 'Absolute times vary between machines: quote the ratios, measured side by side in the '
       'same run. Every figure is the median of the repetitions, the functions interleaved '
       'in each repetition (A B C D, A B C D, ...).';
SELECT '';
SELECT '## Machine';
SELECT '';
SELECT '| | |';
SELECT '| --- | --- |';
SELECT format('| %s | %s |', k, bench.fact(key))
  FROM (VALUES (1, 'CPU', 'machine.cpu'), (2, 'cores', 'machine.cores'),
               (3, 'RAM', 'machine.ram'), (4, 'OS', 'machine.os'),
               (5, 'kernel', 'machine.kernel'), (6, 'storage', 'machine.storage'),
               (6.5, 'load average (1, 5, 15 min)', 'machine.load'),
               (7, 'PostgreSQL', 'pg.version'), (8, 'server settings', 'pg.settings'),
               (9, 'snowflake', 'snowflake.status'), (10, 'source', 'run.source'))
       AS v(ord, k, key)
 ORDER BY ord;

SELECT '';
SELECT '## 1. Core generator (Google Benchmark)';
SELECT '';
SELECT format('`Generator::next()` on one shared `GeneratorState`, durability step off; '
              '%s. ns per ID (wall) is wall time over the IDs of all threads together '
              '(the node''s rate; the layout''s limit of 4,096 IDs per ms is 244 ns per ID); '
              'CPU ns per ID is the CPU time of all threads over their IDs, which time '
              'spent descheduled by other work on the machine does not inflate.',
              bench.fact('core.method'));
SELECT '';
SELECT pg_temp.load_line(1);
SELECT '';
SELECT '| clock | threads | ns per ID (wall) | CPU ns per ID | IDs per second | clock re-reads per ID | allocations per ID |';
SELECT '| --- | ---: | ---: | ---: | ---: | ---: | ---: |';
SELECT format('| %s | %s | %s | %s | %s | %s | %s |', s.clock, s.threads,
              bench.num(1e9 / c.ids_per_second, 1), bench.num(c.cpu_ns_per_id, 1),
              bench.num(c.ids_per_second),
              CASE WHEN s.name LIKE 'real_clock/%' THEN bench.num(c.waits_per_id, 2) ELSE '—' END,
              CASE WHEN s.name LIKE 'clock_read%' THEN '—' ELSE bench.num(c.allocs_per_id) END)
  FROM core_schemes s LEFT JOIN bench.core c ON c.name = s.name
 ORDER BY s.ord;

SELECT '';
SELECT '## 2. SQL throughput, one backend';
SELECT '';
SELECT format('`SELECT count(f) FROM generate_series(1, %s)`, timed on the server '
              '(`clock_timestamp()` around `EXECUTE`); runs per function: %s. '
              'Marginal cost = (time − the floor''s time) / rows. '
              'Packing (max_lead = 0) = (IDs issued / 4,096) / (span in ms of the IDs'' own timestamps), '
              '1.0 being the layout''s limit, measured in runs of its own, interleaved with the others, '
              'with `SELECT count(*), min(id), max(id) FROM (SELECT snowflake_nextval() AS id '
              'FROM generate_series(1, %s)) s`.',
              bench.num(bench.fact('sql.rows')::float8), bench.fact('run.reps'),
              bench.fact('sql.rows'));
SELECT '';
SELECT pg_temp.load_line(2);
SELECT '';
SELECT '| f | median ms | ns per row | marginal ns per call | time vs floor | marginal vs `nextval()` | packing |';
SELECT '| --- | ---: | ---: | ---: | ---: | ---: | ---: |';
SELECT format('| %s | %s | %s | %s | %s | %s | %s |', o.label, bench.num(o.ms, 1),
              bench.num(o.ns_per_row, 1),
              CASE WHEN o.scheme = 'floor' THEN '0 (by definition)'
                   ELSE bench.num(o.marginal_ns, 1) END,
              bench.num(o.vs_floor, 2) || CASE WHEN o.ms IS NULL THEN '' ELSE ' ×' END,
              CASE WHEN o.scheme = 'floor' THEN '—'
                   ELSE bench.num(o.marginal_ns / s.marginal_ns, 3)
                        || CASE WHEN o.ms IS NULL THEN '' ELSE ' ×' END END,
              CASE WHEN o.scheme = 'snowflake_lead0' THEN bench.num(o.packing, 3) ELSE '—' END)
  FROM sql_one o CROSS JOIN (SELECT marginal_ns FROM sql_one WHERE scheme = 'sequence') s
 ORDER BY o.ord;

SELECT '';
SELECT '## 3. SQL throughput, several backends at once';
SELECT '';
SELECT format('Each backend runs the query of item 2 (%s rows) at the same moment; runs: %s; '
              'IDs per second in all = all rows / (last finish − first start); packing of '
              'all the backends'' IDs together, from packing runs as in item 2. '
              'The layout''s limit is 4,096,000 IDs per second per node; it binds '
              'snowflake at max_lead = 0 only. The one-backend rows are item 2''s.',
              bench.num(bench.fact('sql.rows')::float8), bench.fact('sql.many_reps'));
SELECT '';
SELECT pg_temp.load_line(3);
SELECT '';
SELECT '| f | backends | IDs per second, all backends | of 4,096,000/s | packing |';
SELECT '| --- | ---: | ---: | ---: | ---: |';
SELECT format('| %s | %s | %s | %s | %s |', s.label, b.n, bench.num(m.per_second),
              bench.num(m.per_second / 4096000, 2) || CASE WHEN m.per_second IS NULL THEN '' ELSE ' ×' END,
              CASE WHEN s.scheme = 'snowflake_lead0' THEN bench.num(p.packing, 3) ELSE '—' END)
  FROM sql_schemes s
 CROSS JOIN (VALUES (1), (2), (4)) AS b(n)
  LEFT JOIN sql_summary m ON m.scheme = s.scheme AND m.backends = b.n
                         AND m.item = CASE WHEN b.n = 1 THEN 'one' ELSE 'many' END
  LEFT JOIN sql_summary p ON p.scheme = 'packing_lead0' AND p.backends = b.n
                         AND p.item = m.item
 WHERE s.scheme <> 'random'
 ORDER BY s.ord, b.n;

SELECT '';
SELECT '## 4. pgbench';
SELECT '';
SELECT format('`pgbench -M prepared -c 2 -j 2 -T %s`; runs per script: %s, interleaved; '
              'fsync and synchronous_commit on, so every INSERT waits for its commit to reach disk. '
              'Each INSERT table starts empty (TRUNCATE, then CHECKPOINT). snowflake.max_lead is 0, '
              'the default.',
              bench.fact('pgbench.seconds'), bench.fact('pgbench.reps'));
SELECT '';
SELECT pg_temp.load_line(4);
SELECT '';
SELECT '| statement | tps | vs baseline | mean latency ms | p50 ms | p95 ms | p99 ms |';
SELECT '| --- | ---: | ---: | ---: | ---: | ---: | ---: |';
SELECT format('| %s | %s | %s | %s | %s | %s | %s |', label, bench.num(tps),
              CASE WHEN scheme = baseline THEN 'baseline'
                   ELSE bench.num(vs_baseline, 3)
                        || CASE WHEN tps IS NULL THEN '' ELSE ' ×' END END,
              bench.num(2 * 1000 / tps, 3),
              CASE WHEN scheme LIKE 'select%' THEN '—' ELSE bench.num(p50_ms, 3) END,
              CASE WHEN scheme LIKE 'select%' THEN '—' ELSE bench.num(p95_ms, 3) END,
              CASE WHEN scheme LIKE 'select%' THEN '—' ELSE bench.num(p99_ms, 3) END)
  FROM pgbench_summary ORDER BY ord;
SELECT '';
SELECT 'Mean latency = clients / tps. Percentiles come from pgbench''s per-transaction log '
       '(`-l`), for the INSERTs only: pgbench 15 takes its timestamps lazily, so a transaction '
       'of a few microseconds, as the SELECTs are, often logs 0 µs.';

SELECT '';
SELECT '## 5. A table grown by INSERT batches';
SELECT '';
SELECT format('%s rows per table, in INSERTs of %s rows, one batch of each table in turn, '
              'each its own transaction. The rows'' times are spread evenly over the %s days '
              'before %s, the same instants in every table: bigserial and uuid store them in a '
              '`created_at timestamptz` column with its own B-tree, which those schemes need '
              'for time ranges and which is part of their cost; snowflake keys are real '
              '`snowflake_nextval()` IDs whose 41-bit time field is set to the row''s time '
              '(node and sequence bits as issued), i.e. the keys that node would have issued%s. '
              'VACUUM ANALYZE after the load. shared_buffers is %s; the tables fit in it on the '
              'reference machine, so reads are warm.',
              bench.num((SELECT total_rows FROM bench.big_meta)),
              bench.num((SELECT batch_rows FROM bench.big_meta)),
              (SELECT history_ms / 86400000 FROM bench.big_meta),
              (SELECT to_char(history_end AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"')
                 FROM bench.big_meta),
              CASE WHEN pg_temp.shown('uuidv7')
                   THEN '; uuidv7 keys are `uuidv7(row time − clock_timestamp())`, PostgreSQL''s '
                        'own UUIDs of the row''s time' ELSE '' END,
              bench.fact('pg.shared_buffers'))
 WHERE EXISTS (SELECT FROM bench.big_meta);
SELECT format('Item 5 took %s in all.', bench.fact('big.duration'))
 WHERE bench.fact('big.duration') IS NOT NULL;
SELECT '';
SELECT pg_temp.load_line(5);
SELECT '';
SELECT '| key | index for time ranges | load s | rows per s | WAL | heap | key index | time index | all indexes | key index leaf density | VACUUM ANALYZE s |';
SELECT '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |';
SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |', label, time_index,
              bench.num(seconds, 1), bench.num(rows / seconds),
              coalesce(pg_size_pretty(wal_bytes), 'n/a'),
              coalesce(pg_size_pretty(heap_bytes), 'n/a'),
              coalesce(pg_size_pretty(pk_bytes), 'n/a'),
              CASE WHEN scheme IN ('snowflake', 'uuidv7') THEN '—'
                   ELSE coalesce(pg_size_pretty(time_index_bytes), 'n/a') END,
              coalesce(pg_size_pretty(indexes_bytes), 'n/a'),
              CASE WHEN pk_leaf_density IS NULL THEN 'n/a'
                   ELSE bench.num(pk_leaf_density, 1) || ' %' END,
              bench.num(vacuum_ms / 1000, 1))
  FROM big_summary ORDER BY ord;
SELECT '';
SELECT format('Point lookup: `SELECT payload FROM t WHERE id = $1` over %s random existing keys, '
              'passes: %s, timed in PL/pgSQL around a prepared plan (so the figure includes '
              'PL/pgSQL''s own cost per statement, the same for every scheme) in blocks of %s '
              'lookups: median and p95 of the blocks'' mean time per lookup. Range scan: '
              '`SELECT count(*), sum(payload)` over the last hour''s rows, runs: %s; snowflake: '
              '`WHERE id BETWEEN ((ms(t_from) − epoch) << 22) AND ((ms(t_to) − epoch) << 22 | (1<<22)−1)`, '
              '%s'
              'the others: `WHERE created_at BETWEEN t_from AND t_to`. '
              'Buffers: shared buffers the query touched, hit or read (EXPLAIN ANALYZE, BUFFERS).',
              bench.fact('big.lookup_keys'), bench.fact('big.lookup_passes'),
              bench.fact('big.lookup_block'),
              bench.fact('big.range_runs'),
              CASE WHEN pg_temp.shown('uuidv7')
                   THEN 'uuidv7: `WHERE id BETWEEN` the smallest UUIDv7 of t_from''s millisecond '
                        'and the largest of t_to''s; ' ELSE '' END);
SELECT '';
SELECT '| key | point lookup µs (median) | p95 µs | buffers per lookup | last hour: rows | range scan ms (median) | buffers | index used by the range scan |';
SELECT '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |';
SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s |', label,
              bench.num(lookup_us, 2), bench.num(lookup_p95_us, 2), bench.num(lookup_blocks),
              bench.num(found), bench.num(range_ms, 2), bench.num(range_blocks),
              coalesce('`' || range_indexes || '`', 'n/a'))
  FROM big_summary ORDER BY ord;

SELECT '';
SELECT '## 6. This release against the previous one, and layouts per call';
SELECT '';
SELECT format('Item 2''s query over %s rows, one backend, in two clusters of the same PostgreSQL '
              'side by side: this tree''s, and one that preloads the previous release (%s), built '
              'from git and never installed. In each repetition, interleaved: the floor, '
              '`snowflake_nextval()` and `snowflake_generate(n)` (one call for the rows) at '
              'max_lead = 1000 and public IDs each way (under one AES-128 key, where the '
              'previous release has them) in each cluster, then the floor and '
              '`snowflake_decode()` of the floor''s counter (IDs 1, 2, 3, ...) with and '
              'without a layout per call, and base32 each way, in this tree''s. from_* is '
              'timed on to_*''s output: its own cost is the round trip less to_*. Marginal '
              'cost = (time − the same cluster''s floor in the same repetition) / rows; '
              'median of %s repetitions, and the interquartile range of the repetitions.',
              bench.num(bench.fact('sql.rows')::float8),
              coalesce(bench.fact('release.baseline'), 'n/a'), bench.fact('run.reps'));
SELECT '';
SELECT pg_temp.load_line(6);
SELECT '';
SELECT '| f | marginal ns per call | interquartile range ns | vs |';
SELECT '| --- | ---: | ---: | ---: |';
SELECT format('| %s | %s | %s | %s |', label, bench.num(marginal_ns, 1), bench.num(iqr_ns, 1),
              CASE WHEN is_baseline THEN 'baseline'
                   ELSE bench.num(vs_baseline, 3)
                        || CASE WHEN vs_baseline IS NULL THEN '' ELSE ' ×' END END)
  FROM release_summary ORDER BY ord;

SELECT '';
SELECT '## Targets';
SELECT '';
SELECT '| target | measured | |';
SELECT '| --- | --- | --- |';
SELECT format('| %s | %s | %s |', target, measured,
              CASE WHEN met THEN 'PASS' WHEN NOT met THEN '**MISS**' ELSE 'n/a' END)
  FROM targets ORDER BY ord;
SELECT '';
SELECT format('Reproduce: `%s` (as root; about %s on this machine).',
              bench.fact('run.command'), bench.fact('run.duration'));

-- Layouts per call (issue 19): the presets, specifications, and their errors.
-- Expected values are computed here with each system's published formula
-- (shifts and masks written out, each shift in parentheses: in SQL << and |
-- bind alike), not with snowflake's own functions.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';
SET datestyle = 'ISO';
\set SHOW_CONTEXT never

-- The presets.
SELECT name, specification, bits FROM snowflake_layouts();
SELECT count(*) AS presets_whose_specification_differs
  FROM snowflake_layouts() l,
       LATERAL (SELECT (g::bigint * 7919 * 1000003) % (1::bigint << 52) AS id FROM generate_series(1, 50) g) i
 WHERE snowflake_decode(i.id, l.name) IS DISTINCT FROM snowflake_decode(i.id, l.specification);

-- Discord's own example (its API reference): 175928847299117063 is
-- 2016-04-30 11:18:25.796 UTC, worker 1, process 0, increment 7.
SELECT * FROM snowflake_decode(175928847299117063, 'discord');
SELECT ((175928847299117063 >> 22) + 1420070400000) AS discord_ms,
       (175928847299117063 >> 17) & 31 AS worker, (175928847299117063 >> 12) & 31 AS process,
       175928847299117063 & 4095 AS increment;

-- Twitter: the same as the server's default layout.
SELECT * FROM snowflake_decode(1541815603606036480, 'twitter');
SELECT snowflake_decode(1541815603606036480, 'twitter') = snowflake_decode(1541815603606036480) AS same_as_default;

-- One ID per preset, built with the system's formula from
-- 2026-11-22 10:00:00.123 UTC (1795341600123 ms; for Baidu's 28 bits of
-- seconds, which ran out in 2024, 2020-01-01 12:00:00 UTC), node fields 1
-- (and 2), sequence 3.
SELECT p.name, d.*, d.ts = p.expected_ts AS time_right
  FROM (VALUES
    ('twitter',      ((1795341600123 - 1288834974657) << 22) | (1 << 17) | (2 << 12) | 3,    '2026-11-22 10:00:00.123+00'::timestamptz),
    ('leaf',         ((1795341600123 - 1288834974657) << 22) | (2 << 12) | 3,                '2026-11-22 10:00:00.123+00'),
    ('discord',      ((1795341600123 - 1420070400000) << 22) | (1 << 17) | (2 << 12) | 3,    '2026-11-22 10:00:00.123+00'),
    ('instagram',    ((1795341600123 - 1314220021721) << 23) | (2 << 10) | 3,                '2026-11-22 10:00:00.123+00'),
    ('sonyflake',    (((1795341600123 - 1409529600000) / 10) << 24) | (3 << 16) | 2,        '2026-11-22 10:00:00.12+00'),
    ('sonyflake_v2', (((1795341600123 - 1735689600000) / 10) << 24) | (3 << 16) | 2,        '2026-11-22 10:00:00.12+00'),
    ('baidu',        (((1577880000000 - 1463673600000) / 1000) << 35) | (2 << 13) | 3,      '2020-01-01 12:00:00+00'),
    ('mastodon',     (1795341600123 << 16) | 3,                                              '2026-11-22 10:00:00.123+00'),
    ('pgedge',       ((1795341600123 - 1672531200000) << 22) | (2 << 12) | 3,                '2026-11-22 10:00:00.123+00'),
    ('javascript',   (((1795341600123 - 1735689600000) / 10) << 15) | (2 << 10) | 3,        '2026-11-22 10:00:00.12+00')
  ) AS p(name, id, expected_ts),
  LATERAL snowflake_decode(p.id, p.name) d;
-- Each composes back to the same ID.
SELECT p.name, snowflake_compose(d.ts, d.datacenter_id, d.worker_id, d.sequence, p.name) = p.id AS round_trip
  FROM (VALUES ('twitter', 2124549222331764758), ('leaf', 2124549222331764758),
               ('discord', 175928847299117063), ('instagram', 2124549222331764758),
               ('sonyflake', 2124549222331764758), ('sonyflake_v2', 2124549222331764758),
               ('baidu', 2124549222331764758), ('mastodon', 2124549222331764758),
               ('pgedge', 2124549222331764758), ('javascript', 9007199254740991)) AS p(name, id),
       LATERAL snowflake_decode(p.id, p.name) d;
-- Random IDs of every preset.
SELECT l.name, count(*) FILTER (WHERE snowflake_compose(d.ts, d.datacenter_id, d.worker_id, d.sequence, l.name) <> i.id) AS mismatches
  FROM snowflake_layouts() l,
       LATERAL (SELECT (g::bigint * 7919 * 1000003) % (1::bigint << least(l.bits, 62)) AS id FROM generate_series(1, 500) g) i,
       LATERAL snowflake_decode(i.id, l.name) d
 GROUP BY l.name ORDER BY l.name;

-- Sonyflake: the machine ID below the sequence, in units of 10 ms.
SELECT * FROM snowflake_decode(snowflake_compose('2026-11-22 10:00:00.129+00', 0, 300, 5, 'sonyflake'), 'sonyflake');
SELECT snowflake_compose('2026-11-22 10:00:00.129+00', 0, 300, 5, 'sonyflake') & 65535 AS machine,
       (snowflake_compose('2026-11-22 10:00:00.129+00', 0, 300, 5, 'sonyflake') >> 16) & 255 AS sequence;
-- A unit's IDs: from the start of the 10 ms to its end.
SELECT snowflake_min_id('2026-11-22 10:00:00.129+00', 'sonyflake') AS min_id,
       snowflake_max_id('2026-11-22 10:00:00.121+00', 'sonyflake') AS max_id,
       snowflake_max_id('2026-11-22 10:00:00.12+00', 'sonyflake') - snowflake_min_id('2026-11-22 10:00:00.12+00', 'sonyflake') + 1 AS ids_per_unit;
SELECT snowflake_timestamp(snowflake_max_id('2026-11-22 10:00:00.129+00', 'sonyflake'), 'sonyflake');
-- Baidu: whole seconds.
SELECT snowflake_timestamp(snowflake_compose('2024-01-01 12:34:56.789+00', 0, 7, 1, 'baidu'), 'baidu');

-- 64-bit layouts: the sign bit is time. Discord's IDs after 2084-09-06
-- 15:47:35.551 are negative bigints; they decode and compose all the same.
SELECT * FROM snowflake_decode(-1, 'discord');
SELECT snowflake_compose(ts, datacenter_id, worker_id, sequence, 'discord') AS round_trip
  FROM snowflake_decode(-1, 'discord');
SELECT snowflake_max_id('2084-09-06 15:47:35.551+00', 'discord') AS last_positive,
       snowflake_min_id('2084-09-06 15:47:35.552+00', 'discord') AS first_negative;
SELECT * FROM snowflake_decode(-9223372036854775808, 'instagram');

-- The JavaScript-safe preset: IDs below 2^53, the last one in 2112.
SELECT * FROM snowflake_decode(9007199254740991, 'javascript');
SELECT snowflake_max_id('2112-02-09 13:44:29.43+00', 'javascript') AS largest,
       (2::bigint ^ 53)::bigint - 1 AS number_max_safe_integer;

-- Specifications: presets with another epoch, fields in any order below time,
-- case and commas.
SELECT * FROM snowflake_decode((1 << 24) | (3 << 16) | 2, 'sonyflake epoch:1700000000000');
SELECT * FROM snowflake_decode((1 << 24) | (3 << 16) | 2, 'time:39 sequence:8 worker:16 unit:10ms epoch:1700000000000');
SELECT * FROM snowflake_decode((1 << 22) | (5 << 17) | (6 << 12) | 7, 'Time:41, Datacenter:5, Worker:5, Sequence:12');
SELECT * FROM snowflake_decode((1 << 22) | (5 << 17) | (6 << 5) | 7, 'time:41 datacenter:5 sequence:12 worker:5 epoch:0');
SELECT * FROM snowflake_decode((1 << 20) | 3, 'time:43 sequence:20 unit:1s epoch:0');
SELECT snowflake_decode(1, NULL) IS NULL AS null_layout_null_out;

-- Errors: SQLSTATE 22023, naming the presets or the fault.
SELECT * FROM snowflake_decode(1, 'twiter');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, '');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'time:41 worker:10 sequence:12 color:red');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'time:41 worker:10 sequence');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'worker:10 time:41 sequence:12');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'time:41 worker:10 worker:5 sequence:12');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'time:41 worker:ten sequence:12');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'time:41 worker:31 sequence:12');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'time:41 worker:10 sequence:12 unit:3min');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'time:41 worker:10 sequence:12 unit:2s');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'time:41 worker:10 sequence:12 epoch:-5');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'time:42 datacenter:10 worker:10 sequence:12');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'time:41 worker:10');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'worker:10');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'sonyflake worker:10');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'sonyflake twitter');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'time:54 sequence:1 unit:1s');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(1, 'time:30 sequence:32');
\echo :LAST_ERROR_SQLSTATE
-- A long text is quoted only in part.
SELECT * FROM snowflake_decode(1, repeat('x', 1000));
\echo :LAST_ERROR_SQLSTATE
-- An ID the layout cannot hold, fields and times out of its range.
SELECT * FROM snowflake_decode(9007199254740992, 'javascript');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(-1, 'twitter');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_compose('2026-01-01+00', 0, 32, 0, 'javascript');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_compose('2026-01-01+00', 1, 0, 0, 'sonyflake');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_compose('2024-12-31 23:59:59.999+00', 0, 0, 0, 'sonyflake_v2');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_min_id('2112-02-09 13:44:29.44+00', 'javascript');
\echo :LAST_ERROR_SQLSTATE

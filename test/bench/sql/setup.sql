-- The benchmark suite's own objects in its throwaway database (see run.sh):
-- the tables the measurements go into, and the functions that time queries
-- on the server, so that client round trips stay out of the figures.
--
-- Functions that use snowflake_nextval() or the big tables are PL/pgSQL, so
-- they are checked only when first called; without the snowflake extension
-- installed, everything here still loads.
\set ON_ERROR_STOP 1

CREATE SCHEMA bench;

-- Results ------------------------------------------------------------------

-- Item 1, loaded from the Google Benchmark JSON (median of the repetitions).
CREATE TABLE bench.core (
    name text,
    threads int,
    ids_per_second float8,      -- all threads' IDs over wall time
    cpu_ns_per_id float8,       -- all threads' CPU time over all their IDs
    waits_per_id float8,
    allocs_per_id float8,
    state_bytes int
);

-- Items 2 and 3: one row per backend and run. started/finished are
-- clock_timestamp() in ms since 1970 around the query; min_id/max_id are the
-- smallest and largest ID the query issued, for the packing runs only.
CREATE TABLE bench.sql_runs (
    item text,
    scheme text,
    backends int,
    rep int,
    session int,
    rows bigint,
    started float8,
    finished float8,
    min_id bigint,
    max_id bigint,
    max_lead int
);

-- Item 4.
CREATE TABLE bench.pgbench (scheme text, rep int, tps float8);
CREATE TABLE bench.pgbench_latency (
    scheme text,
    transactions bigint,
    p50_ms float8,
    p95_ms float8,
    p99_ms float8
);

-- Item 5.
CREATE TABLE bench.big_meta (
    history_end timestamptz,  -- the simulated "now": the newest row's time
    history_ms bigint,        -- the rows' times spread evenly over this span
    total_rows bigint,
    batch_rows bigint
);
CREATE TABLE bench.load (scheme text, batch int, rows bigint, ms float8, wal_bytes numeric);
CREATE TABLE bench.vacuum (scheme text, ms float8);
CREATE TABLE bench.sizes (
    scheme text,
    heap_bytes bigint,
    pk_bytes bigint,
    time_index_bytes bigint,   -- NULL for snowflake and uuidv7: the key is the time index
    indexes_bytes bigint,
    pk_leaf_density float8     -- pgstatindex: how full the key's leaf pages are
);
CREATE TABLE bench.lookups (scheme text, rep int, us float8);  -- per block of lookups
CREATE TABLE bench.ranges (scheme text, rep int, ms float8, found bigint);
CREATE TABLE bench.plans (
    scheme text,
    query text,
    indexes text,
    shared_blocks bigint,
    actual_rows float8
);

-- Anything else the report needs: snowflake's status, durations, settings.
CREATE TABLE bench.facts (key text PRIMARY KEY, value text);

-- Helpers ------------------------------------------------------------------

-- Runs query once; returns clock_timestamp() before and after, in ms.
CREATE FUNCTION bench.time_query(query text, OUT started float8, OUT finished float8)
LANGUAGE plpgsql AS $$
BEGIN
    started := extract(epoch FROM clock_timestamp()) * 1000;
    EXECUTE query;
    finished := extract(epoch FROM clock_timestamp()) * 1000;
END
$$;

-- The packing query: rows IDs, and the smallest and largest of them. Its
-- IDs' timestamps span the time the IDs were issued in, and nothing else
-- (generate_series() materializes its rows before the first call).
CREATE FUNCTION bench.time_packing(rows bigint, OUT started float8, OUT finished float8,
                                   OUT min_id bigint, OUT max_id bigint)
LANGUAGE plpgsql AS $$
DECLARE
    issued bigint;
BEGIN
    started := extract(epoch FROM clock_timestamp()) * 1000;
    SELECT count(*), min(id), max(id) INTO issued, min_id, max_id
      FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, rows)) AS s;
    finished := extract(epoch FROM clock_timestamp()) * 1000;
    IF issued <> rows THEN
        RAISE EXCEPTION 'the packing query issued % IDs, not %', issued, rows;
    END IF;
END
$$;

-- A number for the report, with thousands separators; NULL is "n/a".
CREATE FUNCTION bench.num(x float8, digits int DEFAULT 0) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(
        to_char(x, 'FM999,999,999,999,990'
                   || CASE WHEN digits > 0 THEN '.' || repeat('0', digits) ELSE '' END),
        'n/a')
$$;

CREATE FUNCTION bench.fact(k text) RETURNS text
LANGUAGE sql STABLE AS $$ SELECT value FROM bench.facts WHERE key = k $$;

-- Item 5: growing the tables ---------------------------------------------

-- The INSERT of rows lo..hi of one scheme. Row i has the time
-- history_end - history + i * history / total_rows (ms), the same instant
-- for every scheme: bigserial and uuid store it in created_at; snowflake
-- takes a real snowflake_nextval() and puts that time in its 41-bit
-- timestamp field, keeping the generator's node and sequence bits, so the
-- key is the one the node would have issued at that instant; uuidv7 asks
-- PostgreSQL's uuidv7(shift) for a UUID of that instant.
CREATE FUNCTION bench.load_query(scheme text, lo bigint, hi bigint) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    m bench.big_meta;
    row_ms text;
BEGIN
    SELECT * INTO STRICT m FROM bench.big_meta;
    row_ms := format('(%s - %s + i * %s / %s)',
                     (extract(epoch FROM m.history_end) * 1000)::bigint,
                     m.history_ms, m.history_ms, m.total_rows);
    IF scheme = 'snowflake' THEN
        RETURN format('INSERT INTO big_snowflake (id, payload) '
                      'SELECT (((%s - 1288834974657) << 22) | (snowflake_nextval() & 4194303)), '
                      '(i %% 1000)::int FROM generate_series(%s::bigint, %s::bigint) AS i',
                      row_ms, lo, hi);
    END IF;
    IF scheme = 'uuidv7' THEN
        RETURN format('INSERT INTO big_uuidv7 (id, payload) '
                      'SELECT uuidv7(to_timestamp(%s / 1000.0) - clock_timestamp()), '
                      '(i %% 1000)::int FROM generate_series(%s::bigint, %s::bigint) AS i',
                      row_ms, lo, hi);
    END IF;
    RETURN format('INSERT INTO big_%s (created_at, payload) '
                  'SELECT to_timestamp(%s / 1000.0), (i %% 1000)::int '
                  'FROM generate_series(%s::bigint, %s::bigint) AS i',
                  scheme, row_ms, lo, hi);
END
$$;

-- Grows the tables of the given schemes to bench.big_meta.total_rows, one
-- batch of each scheme in turn (A B C, A B C, ...), each batch its own
-- transaction, timed to its commit; records time and WAL per batch.
CREATE PROCEDURE bench.load_all(schemes text[])
LANGUAGE plpgsql AS $$
DECLARE
    m bench.big_meta;
    batches int;
    lo bigint;
    hi bigint;
    s text;
    q text;
    t0 timestamptz;
    ms float8;
    wal0 pg_lsn;
    wal bigint;
BEGIN
    SELECT * INTO STRICT m FROM bench.big_meta;
    batches := ceil(m.total_rows::numeric / m.batch_rows);
    FOR b IN 0 .. batches - 1 LOOP
        lo := b * m.batch_rows + 1;
        hi := least(m.total_rows, (b + 1) * m.batch_rows);
        FOREACH s IN ARRAY schemes LOOP
            q := bench.load_query(s, lo, hi);
            wal0 := pg_current_wal_insert_lsn();
            t0 := clock_timestamp();
            EXECUTE q;
            COMMIT;
            ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
            wal := pg_current_wal_insert_lsn() - wal0;
            INSERT INTO bench.load VALUES (s, b, hi - lo + 1, ms, wal);
            COMMIT;
        END LOOP;
        IF (b + 1) % 10 = 0 OR b = batches - 1 THEN
            RAISE NOTICE 'loaded % of % rows per table', hi, m.total_rows;
        END IF;
    END LOOP;
END
$$;

-- Item 5: reading them ----------------------------------------------------
--
-- One function per table, with the query written out (the functions are made
-- from one text, each naming its own table), so that PL/pgSQL keeps its plan
-- (a prepared statement) and the figures are execution only.
-- Point lookups return the mean time of each block of `block` lookups, in
-- microseconds: clock_timestamp() counts whole microseconds, too coarse for
-- one lookup.

DO $do$
DECLARE
    s record;
BEGIN
    FOR s IN SELECT * FROM (VALUES ('snowflake', 'bigint'), ('bigserial', 'bigint'),
                                   ('uuid', 'uuid'), ('uuidv7', 'uuid')) v (scheme, key_type)
    LOOP
        EXECUTE format($create$
CREATE FUNCTION bench.lookup_%1$s(keys %2$s[], block int) RETURNS SETOF float8
LANGUAGE plpgsql AS $body$
DECLARE
    k %2$s;
    p int;
    done int := 0;
    t0 timestamptz := clock_timestamp();
BEGIN
    FOREACH k IN ARRAY keys LOOP
        SELECT payload INTO p FROM big_%1$s WHERE id = k;
        done := done + 1;
        IF done %% block = 0 THEN
            RETURN NEXT extract(epoch FROM clock_timestamp() - t0) * 1e6 / block;
            t0 := clock_timestamp();
        END IF;
    END LOOP;
END
$body$
$create$, s.scheme, s.key_type);
    END LOOP;
END
$do$;

-- The smallest (upper = false) or largest UUIDv7 of t's millisecond: its
-- first 48 bits are the Unix time in ms, and uuids compare byte by byte.
CREATE FUNCTION bench.uuidv7_bound(t timestamptz, upper bool) RETURNS uuid
LANGUAGE sql IMMUTABLE AS $$
    SELECT (lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0')
            || repeat(CASE WHEN upper THEN 'f' ELSE '0' END, 20))::uuid
$$;

-- The rows of [t_from, t_to]: for snowflake and uuidv7 a range of the primary key,
-- from the smallest ID any node can issue in t_from's millisecond to the
-- largest in t_to's; for the others, the created_at index.
CREATE FUNCTION bench.snowflake_range_query(t_from timestamptz, t_to timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT format('SELECT count(*), sum(payload) FROM big_snowflake WHERE id BETWEEN '
                  '(((extract(epoch FROM %1$L::timestamptz) * 1000)::bigint - 1288834974657) << 22) AND '
                  '((((extract(epoch FROM %2$L::timestamptz) * 1000)::bigint - 1288834974657) << 22) | 4194303)',
                  t_from, t_to)
$$;

CREATE FUNCTION bench.range_snowflake(t_from timestamptz, t_to timestamptz,
                                      OUT ms float8, OUT matched bigint)
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz;
    total bigint;
BEGIN
    t0 := clock_timestamp();
    SELECT count(*), sum(payload) INTO matched, total FROM big_snowflake
     WHERE id BETWEEN (((extract(epoch FROM t_from) * 1000)::bigint - 1288834974657) << 22)
                  AND ((((extract(epoch FROM t_to) * 1000)::bigint - 1288834974657) << 22) | 4194303);
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
END
$$;

CREATE FUNCTION bench.uuidv7_range_query(t_from timestamptz, t_to timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT format('SELECT count(*), sum(payload) FROM big_uuidv7 WHERE id BETWEEN %L AND %L',
                  bench.uuidv7_bound(t_from, false), bench.uuidv7_bound(t_to, true))
$$;

CREATE FUNCTION bench.range_uuidv7(t_from timestamptz, t_to timestamptz,
                                   OUT ms float8, OUT matched bigint)
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz;
    total bigint;
BEGIN
    t0 := clock_timestamp();
    SELECT count(*), sum(payload) INTO matched, total FROM big_uuidv7
     WHERE id BETWEEN bench.uuidv7_bound(t_from, false) AND bench.uuidv7_bound(t_to, true);
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
END
$$;

CREATE FUNCTION bench.range_bigserial(t_from timestamptz, t_to timestamptz,
                                      OUT ms float8, OUT matched bigint)
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz;
    total bigint;
BEGIN
    t0 := clock_timestamp();
    SELECT count(*), sum(payload) INTO matched, total FROM big_bigserial
     WHERE created_at BETWEEN t_from AND t_to;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
END
$$;

CREATE FUNCTION bench.range_uuid(t_from timestamptz, t_to timestamptz,
                                 OUT ms float8, OUT matched bigint)
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz;
    total bigint;
BEGIN
    t0 := clock_timestamp();
    SELECT count(*), sum(payload) INTO matched, total FROM big_uuid
     WHERE created_at BETWEEN t_from AND t_to;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
END
$$;

-- After the load and VACUUM: what the table and its indexes take.
CREATE FUNCTION bench.record_sizes(scheme text) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO bench.sizes
    SELECT scheme,
           pg_relation_size(t),
           pg_relation_size(format('big_%s_pkey', scheme)),
           pg_relation_size(to_regclass(format('big_%s_created_at', scheme))),
           pg_indexes_size(t),
           (SELECT avg_leaf_density FROM pgstatindex(format('big_%s_pkey', scheme)))
      FROM CAST(format('big_%s', scheme) AS regclass) AS t
$$;

-- Records the plan of query: the node types, the index names, and the
-- shared buffers it touched (hit or read): the locality in numbers.
CREATE FUNCTION bench.record_plan(scheme text, label text, query text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
    top jsonb;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) ' || query INTO plan;
    top := plan -> 0 -> 'Plan';
    INSERT INTO bench.plans VALUES (
        scheme, label,
        (SELECT string_agg(n #>> '{}', ', ')
           FROM jsonb_path_query(plan, 'strict $.**."Index Name"') AS n),
        (top ->> 'Shared Hit Blocks')::bigint + (top ->> 'Shared Read Blocks')::bigint,
        (SELECT (r #>> '{}')::float8
           FROM jsonb_path_query(plan, 'strict $.**."Actual Rows"') AS r
          ORDER BY (r #>> '{}')::float8 DESC LIMIT 1));
END
$$;

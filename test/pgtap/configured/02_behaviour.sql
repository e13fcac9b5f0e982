-- Behaviour on a configured node: uniqueness, order, the low-rate spread of
-- the sequence, and full milliseconds.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS snowflake;
SELECT plan(11);

CREATE TEMP TABLE issued AS
SELECT n, snowflake_nextval() AS id FROM generate_series(1, 200000) n;
SELECT is((SELECT count(DISTINCT id) FROM issued), 200000::bigint, '200,000 IDs, all distinct');
SELECT is((SELECT count(*) FROM (SELECT id <= lag(id) OVER (ORDER BY n) AS bad FROM issued) s WHERE bad),
          0::bigint, 'each ID is greater than the one before it');
SELECT ok((SELECT bool_and(datacenter_id = 3 AND worker_id = 7)
             FROM issued, snowflake_decode(id) WHERE n % 1000 = 0), 'every ID names this node (3, 7)');
SELECT cmp_ok((SELECT max(id) FROM issued), '<', snowflake_nextval(), 'a later call returns a greater ID');

-- At a low rate (one ID every ~2 ms) the residues of the IDs are close to
-- uniform, so id % n sharding is not skewed toward even IDs.
CREATE TEMP TABLE slow (id bigint);
DO $$
BEGIN
    FOR i IN 1 .. 2000 LOOP
        INSERT INTO slow VALUES (snowflake_nextval());
        PERFORM pg_sleep(0.002);
    END LOOP;
END
$$;
SELECT is((SELECT count(DISTINCT id >> 22) FROM slow), 2000::bigint, 'the slow IDs are one per millisecond');
SELECT ok((SELECT min(share) >= 0.03 AND max(share) <= 0.10
             FROM (SELECT count(*)::float8 / 2000 AS share FROM slow GROUP BY id % 16) s)
          AND (SELECT count(DISTINCT id % 16) FROM slow) = 16,
          'every residue of id % 16 holds 3% to 10% of the IDs');
SELECT ok((SELECT count(*) FILTER (WHERE id % 2 = 0)::float8 / count(*) BETWEEN 0.45 AND 0.55 FROM slow),
          'id % 2 splits them evenly');
SELECT diag('id % 16 shares: ' || string_agg(to_char(share, 'FM0.000'), ' ' ORDER BY r))
  FROM (SELECT id % 16 AS r, count(*)::float8 / 2000 AS share FROM slow GROUP BY 1) s;

-- At full rate a millisecond still yields at least 4,050 IDs (the spread
-- costs at most 31 of 4,096). snowflake_generate takes a millisecond's IDs
-- in one step, so its full milliseconds show it whatever the load.
CREATE TEMP TABLE bulk AS SELECT id FROM snowflake_generate(200000) id;
SELECT cmp_ok((SELECT min(c) FROM (SELECT id >> 22 AS ms, count(*) AS c FROM bulk GROUP BY 1) s
                WHERE ms > (SELECT min(id >> 22) FROM bulk) AND ms < (SELECT max(id >> 22) FROM bulk)),
              '>=', 4050::bigint, 'every full millisecond holds at least 4,050 IDs');
SELECT is((SELECT count(DISTINCT id) FROM bulk), 200000::bigint, 'snowflake_generate: 200,000 distinct IDs');

-- A rolled-back ID is never issued again.
SAVEPOINT before_insert;
CREATE TEMP TABLE kept (id bigint DEFAULT snowflake_nextval());
INSERT INTO kept DEFAULT VALUES;
SELECT snowflake_lastval() AS rolled_back \gset
ROLLBACK TO before_insert;
SELECT cmp_ok(snowflake_nextval(), '>', :rolled_back::bigint, 'IDs of a rolled-back transaction are not reused');
SELECT snowflake_nextval() AS latest \gset
SELECT is(snowflake_lastval(), :latest::bigint, 'snowflake_lastval() is the ID snowflake_nextval() returned last');

SELECT * FROM finish();
ROLLBACK;

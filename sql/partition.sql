-- PARTITION BY HASH (id snowflake_node_ops): one partition per node.
CREATE EXTENSION IF NOT EXISTS snowflake;

CREATE TABLE orders (id bigint PRIMARY KEY, item text) PARTITION BY HASH (id snowflake_node_ops);
CREATE TABLE orders_node_5 PARTITION OF orders FOR VALUES WITH (MODULUS 1024, REMAINDER 5);
CREATE TABLE orders_node_103 PARTITION OF orders FOR VALUES WITH (MODULUS 1024, REMAINDER 103);
CREATE TABLE orders_node_231 PARTITION OF orders FOR VALUES WITH (MODULUS 1024, REMAINDER 231);

-- Node 103 is datacenter 3, worker 7: this server's own IDs land there.
INSERT INTO orders (id, item) SELECT snowflake_nextval(), 'mine' FROM generate_series(1, 100);
INSERT INTO orders (id, item)
SELECT snowflake_compose(now(), dc, w, s), 'composed'
  FROM (VALUES (0, 5), (7, 7)) n(dc, w), generate_series(0, 9) s;
SELECT tableoid::regclass AS partition, datacenter_id, worker_id, count(*)
  FROM orders, snowflake_decode(id) GROUP BY 1, 2, 3 ORDER BY 1;

-- An ID from a node without a partition is refused, like any unrouted row.
INSERT INTO orders VALUES (snowflake_compose('2026-01-01+00', 1, 1, 0), 'nowhere');

-- A lookup by ID reaches one partition.
EXPLAIN (COSTS OFF) SELECT * FROM orders WHERE id = snowflake_compose('2026-01-01+00', 7, 7, 1);
DROP TABLE orders;

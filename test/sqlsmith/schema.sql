-- What the sqlsmith layer's random queries run against (test/sqlsmith/run.sh):
-- tables keyed by snowflake_nextval(), IDs in other columns and as base32
-- text, layouts as text, and a table partitioned by the node that issued
-- each ID (PARTITION BY HASH (id snowflake_node_ops), sql/partition.sql),
-- so that sqlsmith finds bigint, text and timestamptz columns full of IDs
-- and layouts to hand to snowflake's functions.
CREATE EXTENSION IF NOT EXISTS snowflake;

CREATE TABLE orders (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    item text NOT NULL,
    placed timestamptz NOT NULL DEFAULT now()
);
INSERT INTO orders (item) SELECT 'item ' || n FROM generate_series(1, 500) n;

CREATE TABLE order_lines (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    order_id bigint NOT NULL REFERENCES orders,
    quantity integer NOT NULL,
    public_id text
);
INSERT INTO order_lines (order_id, quantity, public_id)
SELECT id, (id % 7)::int, snowflake_to_base32(id) FROM orders;

CREATE TABLE layouts (name text PRIMARY KEY, spec text NOT NULL, example bigint);
INSERT INTO layouts
SELECT name, specification, snowflake_max_id(snowflake_timestamp(0, name) + interval '1 day', name)
  FROM snowflake_layouts();
INSERT INTO layouts VALUES
    ('spec_64', 'time:48 sequence:16 epoch:0', NULL),
    ('spec_seconds', 'time:28 worker:22 sequence:13 unit:1s', NULL),
    ('spec_middle', 'time:40 worker:4 sequence:10 datacenter:9 unit:250ms', NULL),
    ('bad', 'time:70 sequence:1', NULL);

CREATE TABLE events (id bigint PRIMARY KEY, payload text) PARTITION BY HASH (id snowflake_node_ops);
CREATE TABLE events_node_5 PARTITION OF events FOR VALUES WITH (MODULUS 1024, REMAINDER 5);
CREATE TABLE events_node_103 PARTITION OF events FOR VALUES WITH (MODULUS 1024, REMAINDER 103);
INSERT INTO events SELECT snowflake_nextval(), 'mine' FROM generate_series(1, 200);
INSERT INTO events
SELECT snowflake_compose(now() - s * interval '1 hour', dc, w, s), 'composed'
  FROM (VALUES (0, 5), (3, 7)) n(dc, w), generate_series(0, 99) s;
ANALYZE;

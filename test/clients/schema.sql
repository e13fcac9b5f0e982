-- The schema of the driver recipes in doc/clients.md (psycopg, psycopg2,
-- pgjdbc, pgx, node-postgres): each of those tests runs this file first.
-- guide: begin schema
CREATE EXTENSION IF NOT EXISTS snowflake;

CREATE TABLE customers (
    id   bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    name text NOT NULL
);
CREATE TABLE orders (
    id          bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    customer_id bigint NOT NULL REFERENCES customers,
    item        text NOT NULL
);
-- guide: end

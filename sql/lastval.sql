-- snowflake_lastval() is session state, like lastval(): DISCARD SEQUENCES
-- and DISCARD ALL forget both (pgbouncer's session pooling runs DISCARD ALL
-- before it hands a server connection to another client); DISCARD PLANS and
-- DISCARD TEMP keep both.
CREATE EXTENSION IF NOT EXISTS snowflake;
\set SHOW_CONTEXT never
CREATE SEQUENCE lastval_seq;

SELECT nextval('lastval_seq') > 0 AS sequence_issued, snowflake_nextval() > 0 AS issued;
SELECT snowflake_lastval() > 0 AS defined;
DISCARD SEQUENCES;
SELECT lastval();
SELECT snowflake_lastval();

SELECT nextval('lastval_seq') > 0 AS sequence_issued, snowflake_nextval() > 0 AS issued;
DISCARD PLANS;
DISCARD TEMP;
SELECT lastval() > 0 AS sequence_kept, snowflake_lastval() > 0 AS kept;
DISCARD ALL;
SELECT lastval();
SELECT snowflake_lastval();

-- snowflake_generate(n) sets it too, and DISCARD forgets that as well.
SELECT count(*) FROM snowflake_generate(3);
SELECT snowflake_lastval() > 0 AS defined;
DISCARD ALL;
SELECT snowflake_lastval();

-- DISCARD ALL inside a transaction block fails, and forgets nothing.
SELECT snowflake_nextval() AS last_issued \gset
BEGIN;
DISCARD ALL;
ROLLBACK;
SELECT snowflake_lastval() = :last_issued AS kept;

-- A DISCARD SEQUENCES whose transaction rolls back has still forgotten, as
-- with lastval(): the reset is not transactional.
BEGIN;
DISCARD SEQUENCES;
ROLLBACK;
SELECT snowflake_lastval();

DROP SEQUENCE lastval_seq;

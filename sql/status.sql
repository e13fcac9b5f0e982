-- The status views: one row for the node, one per backend that issued IDs.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';
SET datestyle = 'ISO';
\set SHOW_CONTEXT never

SELECT snowflake_nextval() > 0 AS issued;
SELECT datacenter_id, worker_id, epoch, timestamp_bits, datacenter_bits, worker_bits, sequence_bits,
       last_issued_at <= clock_timestamp() + interval '1 s' AS last_issued_is_now,
       -- max_lead is 0: the generator is never ahead of the clock by more
       -- than the coarse clock's lag.
       lead_ms < 50 AS lead_within_max_lead, ids_issued >= 1 AS counted,
       -- a call waits for the next millisecond at most once
       sequence_waits <= ids_issued AS sequence_waits_bounded,
       -- nothing moves this server's clock back
       clock_waits = 0 AND clock_errors = 0 AS no_clock_waits,
       clock_steps = 0 AND largest_clock_step_ms = 0 AS no_clock_steps,
       durable_until > last_issued_at AS durable_ahead,
       durable_until > snowflake_timestamp(snowflake_lastval()) AS bound_above_last_id
  FROM snowflake_status;
-- When the layout runs out (1.7): the time of its largest ID, the default
-- layout's in 2080, and the time from now until then.
SELECT layout_ends_at, layout_ends_at = snowflake_timestamp(9223372036854775807) AS largest_id_time,
       abs(extract(epoch FROM layout_remaining - (layout_ends_at - clock_timestamp()))) < 5
         AS remaining_until_the_end
  FROM snowflake_status;
SELECT count(*) AS me, bool_and(ids_issued >= 1) AS counted
  FROM snowflake_backend_status WHERE pid = pg_backend_pid();
-- The node's figures are the sums over backends, live and exited.
SELECT n.ids_issued >= b.ids_issued AS node_covers_backends,
       n.sequence_waits >= b.sequence_waits AS node_waits_cover_backends
  FROM snowflake_status n,
       (SELECT sum(ids_issued) AS ids_issued, sum(sequence_waits) AS sequence_waits
          FROM snowflake_backend_status) b;
SELECT ids_issued AS before FROM snowflake_backend_status WHERE pid = pg_backend_pid() \gset
SELECT count(*) FROM snowflake_generate(5000);
SELECT ids_issued - :before AS issued_since FROM snowflake_backend_status WHERE pid = pg_backend_pid();

-- A call that finds the durable bound behind the clock waits for a new one to
-- be written (WAL, the state file): counted, with its time. After more than
-- the bound's interval (1 s) without IDs, the next call is such a call; the
-- node's figures cover the backend's.
SELECT durable_waits AS waits_before FROM snowflake_backend_status WHERE pid = pg_backend_pid() \gset
SELECT pg_sleep(1.5);
SELECT snowflake_nextval() > 0 AS issued;
SELECT durable_waits - :waits_before AS waited, durable_wait_ms >= 0 AS timed
  FROM snowflake_backend_status WHERE pid = pg_backend_pid();
SELECT n.durable_waits >= b.durable_waits AS node_covers_backend_waits,
       n.durable_wait_ms >= b.durable_wait_ms AS node_covers_backend_time
  FROM snowflake_status n,
       (SELECT sum(durable_waits) AS durable_waits, sum(durable_wait_ms) AS durable_wait_ms
          FROM snowflake_backend_status) b;

-- Readable by pg_monitor and by anyone granted the view; nobody else.
CREATE ROLE regress_snowflake_stranger;
CREATE ROLE regress_snowflake_monitor IN ROLE pg_monitor;
CREATE ROLE regress_snowflake_granted;
GRANT SELECT ON snowflake_status TO regress_snowflake_granted;
SET ROLE regress_snowflake_stranger;
SELECT count(*) FROM snowflake_status;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM snowflake_status();
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM snowflake_backend_status;
\echo :LAST_ERROR_SQLSTATE
SET ROLE regress_snowflake_monitor;
SELECT count(*) FROM snowflake_status;
SELECT count(*) >= 1 AS sees_backends FROM snowflake_backend_status;
SET ROLE regress_snowflake_granted;
SELECT count(*) FROM snowflake_status;
SELECT count(*) FROM snowflake_backend_status;
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
REVOKE SELECT ON snowflake_status FROM regress_snowflake_granted;
DROP ROLE regress_snowflake_stranger, regress_snowflake_monitor, regress_snowflake_granted;

-- The SQL surface: signatures, return types, volatility, strictness,
-- parallel safety, comments, views and privileges; the settings' contexts.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS snowflake;
SELECT plan(203);

-- Every function: exists, returns what it says, with the volatility,
-- strictness and parallel label it should have, and a comment.
CREATE TEMP TABLE expected_functions (signature text, returns text, volatility text, strict boolean, parallel "char");
INSERT INTO expected_functions VALUES
    ('snowflake_nextval()',                                 'bigint',      'volatile',  false, 's'),
    ('snowflake_decode(bigint)',                            'record',      'immutable', true,  's'),
    ('snowflake_timestamp(bigint)',                         'timestamp with time zone', 'immutable', true, 's'),
    ('snowflake_compose(timestamptz,integer,integer,integer)', 'bigint',   'immutable', true,  's'),
    ('snowflake_min_id(timestamptz)',                       'bigint',      'immutable', true,  's'),
    ('snowflake_max_id(timestamptz)',                       'bigint',      'immutable', true,  's'),
    ('snowflake_lastval()',                                 'bigint',      'volatile',  false, 'r'),
    ('snowflake_generate(integer)',                         'SETOF bigint', 'volatile', true,  's'),
    ('snowflake_to_base32(bigint)',                         'text',        'immutable', true,  's'),
    ('snowflake_from_base32(text)',                         'bigint',      'immutable', true,  's'),
    ('snowflake_convert_column(regclass,name)',             'void',        'volatile',  true,  'u'),
    ('snowflake_status()',                                  'record',      'volatile',  true,  's'),
    ('snowflake_backend_status()',                          'SETOF record', 'volatile', true,  's'),
    ('snowflake_node_hash(bigint,bigint)',                  'bigint',      'immutable', true,  's'),
    ('snowflake_node_hash32(bigint)',                       'integer',     'immutable', true,  's'),
    ('snowflake_registry_status()',                         'record',      'volatile',  true,  's'),
    ('snowflake_node_identity()',                           'record',      'volatile',  true,  's'),
    ('snowflake_cluster_identities()',                      'SETOF record', 'volatile', true,  'u'),
    ('snowflake_restore_bound(text)',                       'timestamp with time zone', 'volatile', true, 'u'),
    ('snowflake_set_bound(timestamptz,boolean)',            'timestamp with time zone', 'volatile', true, 'u'),
    ('snowflake_decode(bigint,text)',                       'record',      'immutable', true,  's'),
    ('snowflake_timestamp(bigint,text)',                    'timestamp with time zone', 'immutable', true, 's'),
    ('snowflake_compose(timestamptz,integer,integer,integer,text)', 'bigint', 'immutable', true, 's'),
    ('snowflake_min_id(timestamptz,text)',                  'bigint',      'immutable', true,  's'),
    ('snowflake_max_id(timestamptz,text)',                  'bigint',      'immutable', true,  's'),
    ('snowflake_layouts()',                                 'SETOF record', 'immutable', true, 's'),
    ('snowflake_to_public(bigint,text)',                    'text',        'stable',    true,  's'),
    ('snowflake_from_public(text,text)',                    'bigint',      'stable',    true,  's');

SELECT ok(to_regprocedure(signature) IS NOT NULL, signature || ' exists') FROM expected_functions;
SELECT is(pg_get_function_result(to_regprocedure(signature)), returns, signature || ' returns ' || returns)
  FROM expected_functions;
SELECT is(CASE provolatile WHEN 'i' THEN 'immutable' WHEN 's' THEN 'stable' ELSE 'volatile' END,
          volatility, signature || ' is ' || volatility)
  FROM expected_functions JOIN pg_proc ON oid = to_regprocedure(signature);
SELECT is(proisstrict, strict, signature || CASE WHEN strict THEN ' is' ELSE ' is not' END || ' STRICT')
  FROM expected_functions JOIN pg_proc ON oid = to_regprocedure(signature);
SELECT is(proparallel, parallel, signature || ' is PARALLEL ' || parallel::text)
  FROM expected_functions JOIN pg_proc ON oid = to_regprocedure(signature);
SELECT isnt(obj_description(to_regprocedure(signature), 'pg_proc'), NULL, signature || ' has a comment')
  FROM expected_functions;

-- snowflake_decode's record has exactly these columns.
SELECT is(pg_get_function_result('snowflake_decode(bigint)'::regprocedure),
          'record', 'snowflake_decode returns a record');
SELECT is(pg_get_function_arguments('snowflake_decode(bigint)'::regprocedure),
          'id bigint, OUT ts timestamp with time zone, OUT datacenter_id integer, OUT worker_id integer, OUT sequence integer',
          'snowflake_decode(id) has OUT columns (ts, datacenter_id, worker_id, sequence)');
SELECT is(pg_get_function_arguments('snowflake_decode(bigint,text)'::regprocedure),
          'id bigint, layout text, OUT ts timestamp with time zone, OUT datacenter_id integer, OUT worker_id integer, OUT sequence integer',
          'snowflake_decode(id, layout) has the same OUT columns');

-- The status views, readable by pg_monitor and not by PUBLIC.
SELECT has_view('snowflake_status');
SELECT has_view('snowflake_backend_status');
SELECT columns_are('snowflake_status', ARRAY['datacenter_id', 'worker_id', 'epoch', 'timestamp_bits',
    'datacenter_bits', 'worker_bits', 'sequence_bits', 'last_issued_at', 'lead_ms', 'ids_issued',
    'sequence_waits', 'clock_waits', 'clock_errors', 'clock_steps', 'largest_clock_step_ms',
    'durable_until', 'layout', 'durable_waits', 'durable_wait_ms', 'layout_ends_at',
    'layout_remaining']);
SELECT col_type_is('snowflake_status', 'layout_ends_at', 'timestamp with time zone',
                   'layout_ends_at is a timestamptz');
SELECT col_type_is('snowflake_status', 'layout_remaining', 'interval',
                   'layout_remaining is an interval');
SELECT columns_are('snowflake_backend_status', ARRAY['pid', 'ids_issued', 'sequence_waits',
    'clock_waits', 'clock_errors', 'clock_steps', 'largest_clock_step_ms', 'durable_waits',
    'durable_wait_ms']);
SELECT ok(has_table_privilege('pg_monitor', 'snowflake_status', 'SELECT'), 'pg_monitor can read snowflake_status');
SELECT ok(has_table_privilege('pg_monitor', 'snowflake_backend_status', 'SELECT'), 'pg_monitor can read snowflake_backend_status');
SELECT ok(NOT has_table_privilege('public', 'snowflake_status', 'SELECT'), 'PUBLIC cannot read snowflake_status');
SELECT has_view('snowflake_registry_status');
SELECT ok(has_table_privilege('pg_monitor', 'snowflake_registry_status', 'SELECT')
          AND NOT has_table_privilege('public', 'snowflake_registry_status', 'SELECT'),
          'snowflake_registry_status is for pg_monitor, not PUBLIC (it names other nodes)');

-- The functions that give a node its bound are not for PUBLIC.
SELECT ok(NOT has_function_privilege('public', 'snowflake_restore_bound(text)', 'EXECUTE')
          AND NOT has_function_privilege('public', 'snowflake_set_bound(timestamptz,boolean)', 'EXECUTE'),
          'snowflake_restore_bound and snowflake_set_bound are not for PUBLIC');

-- Settings: contexts (who can change them, and when) and units.
SELECT is(context, expected, name || ' takes effect at ' || expected)
  FROM pg_settings JOIN (VALUES
      ('snowflake.datacenter_id', 'sighup'), ('snowflake.worker_id', 'sighup'),
      ('snowflake.max_lead', 'sighup'), ('snowflake.max_clock_backward_wait', 'sighup'),
      ('snowflake.epoch', 'postmaster'), ('snowflake.timestamp_bits', 'postmaster'),
      ('snowflake.datacenter_bits', 'postmaster'), ('snowflake.worker_bits', 'postmaster'),
      ('snowflake.sequence_bits', 'postmaster'), ('snowflake.layout', 'postmaster'))
      AS e(setting_name, expected) ON name = setting_name
 ORDER BY name;
SELECT is(unit, 'ms', name || ' is in milliseconds')
  FROM pg_settings WHERE name IN ('snowflake.max_lead', 'snowflake.max_clock_backward_wait') ORDER BY name;
SELECT is((SELECT min_val || '..' || max_val FROM pg_settings WHERE name = 'snowflake.worker_id'),
          '-1..31', 'snowflake.worker_id ranges over the worker field (-1 = unset)');

-- An ordinary role can issue IDs, and can change none of the settings.
CREATE ROLE regress_snowflake_app;
SET ROLE regress_snowflake_app;
SELECT lives_ok('SELECT snowflake_nextval()', 'an ordinary role issues IDs');
SELECT throws_ok('SET snowflake.worker_id = 9', '55P02', NULL, 'an ordinary role cannot SET snowflake.worker_id');
SELECT throws_ok('SET LOCAL snowflake.datacenter_id = 9', '55P02', NULL, '... nor SET LOCAL snowflake.datacenter_id');
SELECT throws_ok('SET snowflake.max_lead = 5', '55P02', NULL, '... nor snowflake.max_lead');
SELECT throws_ok('SELECT set_config(''snowflake.worker_id'', ''9'', true)', '55P02', NULL, '... nor set_config()');
RESET ROLE;
SELECT throws_ok('SET snowflake.worker_id = 9', '55P02', NULL, 'not even a superuser can SET it in a session');
SELECT is(current_setting('snowflake.worker_id'), '7', 'the node keeps its worker_id');

SELECT * FROM finish();
ROLLBACK;

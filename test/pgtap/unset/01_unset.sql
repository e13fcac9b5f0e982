-- A preloaded node whose snowflake.datacenter_id and snowflake.worker_id are
-- not set: it refuses to issue IDs (it would collide with another node that
-- forgot its identity), with a message and a hint; everything else works.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS snowflake;
SELECT plan(15);

\ir ../error_of.sql

SELECT is(current_setting('snowflake.worker_id'), '-1', 'snowflake.worker_id is unset (-1)');
-- Both missing settings are named at once: setting what the hint says is
-- enough (issue 31), not one and then the other.
SELECT throws_ok('SELECT snowflake_nextval()', '55000',
                 'snowflake.datacenter_id and snowflake.worker_id are not set',
                 'snowflake_nextval() refuses while the identity is unset, naming both settings');
SELECT matches((pg_temp.error_of('SELECT snowflake_nextval()')).hint,
               '^Set snowflake\.datacenter_id \(0-31\) and snowflake\.worker_id \(0-31\) in postgresql\.conf to a pair no other node uses, then reload\.$',
               'the hint names both settings, their ranges, and to reload');
SELECT matches((pg_temp.error_of('SELECT snowflake_nextval()')).message, 'worker_id',
               'the message names worker_id too');
SELECT throws_ok('SELECT * FROM snowflake_generate(5)', '55000',
                 'snowflake.datacenter_id and snowflake.worker_id are not set',
                 'snowflake_generate() refuses too');
SELECT throws_ok('CREATE TEMP TABLE t (id bigint DEFAULT snowflake_nextval()); INSERT INTO t DEFAULT VALUES',
                 '55000', NULL, 'an INSERT relying on the default fails and inserts nothing');
SELECT is((SELECT datacenter_id FROM snowflake_decode(1541815603606036480)), 11, 'decoding needs no identity');
SELECT is(snowflake_to_base32(31), '000000000000Z', 'nor does base32');
-- Nor is a key for public IDs: those functions refuse, saying what to set.
SELECT throws_ok('SELECT snowflake_to_public(1)', '55000', 'no key for public IDs is configured',
                 'snowflake_to_public() refuses without a key');
SELECT matches((pg_temp.error_of('SELECT snowflake_to_public(1)')).hint,
               '^A superuser sets snowflake\.public_id_keys_file in postgresql\.conf to a file of keys \(doc/public-ids\.md\), then reloads\.$',
               'the hint names the setting and the guide');
SELECT throws_ok('SELECT snowflake_from_public(''A3DH0M90E42XAG'')', '55000',
                 'no key for public IDs is configured', 'so does snowflake_from_public()');
SELECT is((SELECT worker_id FROM snowflake_status), NULL::integer, 'snowflake_status shows the worker_id as NULL');
SELECT is((SELECT ids_issued FROM snowflake_status), 0::bigint, 'and no ID issued');
SELECT is((SELECT problem FROM snowflake_node_identity()), 'snowflake.datacenter_id and snowflake.worker_id are not set',
          'snowflake_node_identity() says why the node issues no IDs');
SELECT is((SELECT node || ': ' || problem FROM snowflake_cluster_identities()),
          'local: snowflake.datacenter_id and snowflake.worker_id are not set', 'and so does the cluster check (without Citus: this node)');

SELECT * FROM finish();
ROLLBACK;

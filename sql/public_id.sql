-- Public IDs (issue 40): FF1 under the keys of snowflake.public_id_keys_file.
-- scripts/test.sh gives this server test/pgtap/public_id.keys: key A, then
-- key B, which encodes (NIST's sample keys: public, for tests only). A server
-- without keys gives public_id_1.out: every call refuses, saying so. The
-- rotation itself, with reloads, is test/t/081_public_ids.pl's.
-- Quietly: an earlier test may have created it, or not (the order of tests).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS snowflake;
RESET client_min_messages;
\set SHOW_CONTEXT never

-- Fixed width, the current key's version first, and back. These texts must
-- never change: users keep them.
SELECT snowflake_to_public(1541815603606036480) AS public_id,
       snowflake_to_public(1541815603606036480, 'orders') AS with_tweak,
       snowflake_to_public(0) AS zero,
       snowflake_to_public(9223372036854775807) AS largest;
SELECT snowflake_from_public('B7TDY1K44ASK93'), snowflake_from_public('B0J2B4MDVWPK55', 'orders');
-- Key A is no longer current, and its texts still decode (the unit tests pin
-- the same texts).
SELECT snowflake_from_public('A3DH0M90E42XAG'), snowflake_from_public('A0T1PV5J06TZCB', 'orders');
SELECT count(*) AS round_trip_failures
  FROM (SELECT id, snowflake_to_public(id) AS p
          FROM (SELECT (g::bigint * 104729 * 1000003) % 9223372036854775807 AS id
                  FROM generate_series(1, 5000) g) s) t
 WHERE snowflake_from_public(p) <> id OR length(p) <> 14;
-- Neighbours look unrelated: the texts of consecutive IDs share their
-- second character (3 bits) about as often as random texts would, 1 in 8,
-- and their first two digits 1 in 256.
SELECT count(*) FILTER (WHERE left(a, 2) = left(b, 2)) BETWEEN 60 AND 200 AS second_shared_as_by_chance,
       count(*) FILTER (WHERE left(a, 3) = left(b, 3)) < 20 AS third_rarely
  FROM (SELECT snowflake_to_public(1541815603606036480 + g) AS a,
               snowflake_to_public(1541815603606036481 + g) AS b
          FROM generate_series(0, 999) g) s;
-- Case-insensitive, with Crockford's aliases, as snowflake_from_base32.
SELECT snowflake_from_public('a3dh0m90e42xag') AS lower_case,
       snowflake_from_public('A3DHOM9OE42XAG') AS o_for_zero;
-- The tweak must match: another one gives another ID, not an error. Any
-- well-formed text gives some ID: a public ID authenticates nothing.
SELECT snowflake_from_public('A0T1PV5J06TZCB', 'users') <> 1541815603606036480 AS other_id,
       snowflake_from_public('B0000000000000') >= 0 AS some_id;
-- NULL in, NULL out.
SELECT snowflake_to_public(NULL) IS NULL AS null_id, snowflake_from_public(NULL) IS NULL AS null_text,
       snowflake_to_public(1, NULL) IS NULL AS null_tweak;

-- Texts that are no public ID.
SELECT snowflake_from_public('A3DH0M90E42XA');
SELECT snowflake_from_public('A3DH0M90E42XAG0');
SELECT snowflake_from_public('A3DH0M90E42-AG');
SELECT snowflake_from_public('A3DH0M90E42XAü');
SELECT snowflake_from_public('C3DH0M90E42XAG');
SELECT snowflake_from_public('A8DH0M90E42XAG');
SELECT snowflake_from_public(repeat('A', 1000000));
SELECT snowflake_to_public(-1);

-- Who sees what: the setting holds a path, only superusers read it, and no
-- one reads the keys through SQL; anyone may call the functions.
SELECT name, context FROM pg_settings WHERE name = 'snowflake.public_id_keys_file';
CREATE ROLE snowflake_public_id_reader;
SET ROLE snowflake_public_id_reader;
-- SHOW and current_setting() refuse with 42501 (the message differs by major).
DO $$
BEGIN
  PERFORM current_setting('snowflake.public_id_keys_file');
  RAISE NOTICE 'current_setting: shown';
EXCEPTION WHEN insufficient_privilege THEN
  RAISE NOTICE 'current_setting: refused (%)', SQLSTATE;
END $$;
DO $$
BEGIN
  EXECUTE 'SHOW snowflake.public_id_keys_file';
  RAISE NOTICE 'SHOW: shown';
EXCEPTION WHEN insufficient_privilege THEN
  RAISE NOTICE 'SHOW: refused (%)', SQLSTATE;
END $$;
SELECT count(*) AS settings_shown FROM pg_settings WHERE name LIKE 'snowflake.public_id%';
SELECT count(*) FROM pg_file_settings;
SELECT pg_read_file('postgresql.conf');
SELECT snowflake_from_public(snowflake_to_public(42)) AS anyone_may_call;
RESET ROLE;
DROP ROLE snowflake_public_id_reader;

-- The tweak is taken as UTF-8 whatever the database's encoding (issue 45): the
-- same ID and tweak give the same text in a UTF8, a LATIN1 and an SQL_ASCII
-- database, and A1GSFQ177PQ4G3, key A's text of "café" (test/unit pins it,
-- test/unit/ff1_reference.py computes it), decodes in each. In SQL_ASCII a
-- tweak must be UTF-8 already. (MULE_INTERNAL, which has no conversion to
-- UTF-8 and is gone in 19, is test/t/081_public_ids.pl's.)
\set regress_database :DBNAME
CREATE DATABASE snowflake_public_id_utf8 ENCODING 'UTF8' LOCALE 'C' TEMPLATE template0;
CREATE DATABASE snowflake_public_id_latin1 ENCODING 'LATIN1' LOCALE 'C' TEMPLATE template0;
CREATE DATABASE snowflake_public_id_sql_ascii ENCODING 'SQL_ASCII' LOCALE 'C' TEMPLATE template0;
\c snowflake_public_id_utf8
SET client_encoding = 'UTF8';
CREATE EXTENSION snowflake;
SELECT current_setting('server_encoding') AS encoding,
       snowflake_to_public(1541815603606036480, 'café') AS public_id,
       snowflake_from_public('A1GSFQ177PQ4G3', 'café') AS id;
\c snowflake_public_id_latin1
SET client_encoding = 'UTF8';
CREATE EXTENSION snowflake;
SELECT current_setting('server_encoding') AS encoding,
       snowflake_to_public(1541815603606036480, 'café') AS public_id,
       snowflake_from_public('A1GSFQ177PQ4G3', 'café') AS id;
\c snowflake_public_id_sql_ascii
SET client_encoding = 'UTF8';
CREATE EXTENSION snowflake;
SELECT current_setting('server_encoding') AS encoding,
       snowflake_to_public(1541815603606036480, 'café') AS public_id,
       snowflake_from_public('A1GSFQ177PQ4G3', 'café') AS id;
SELECT snowflake_to_public(1541815603606036480, E'caf\xe9');
\c :regress_database
DROP DATABASE snowflake_public_id_utf8;
DROP DATABASE snowflake_public_id_latin1;
DROP DATABASE snowflake_public_id_sql_ascii;

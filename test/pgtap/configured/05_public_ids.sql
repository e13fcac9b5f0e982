-- Public IDs (issue 40) on a server whose snowflake.public_id_keys_file
-- lists two keys (test/pgtap/public_id.keys): A, then B, which encodes.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS snowflake;
SELECT plan(24);

\ir ../error_of.sql

-- The form: 14 characters, the current key's version first, and back.
SELECT is(length(snowflake_to_public(1541815603606036480)), 14, 'a public ID has 14 characters');
SELECT is(left(snowflake_to_public(1541815603606036480), 1), 'B', 'the last key listed encodes');
SELECT is(snowflake_from_public(snowflake_to_public(1541815603606036480)), 1541815603606036480::bigint,
          'it decodes to the ID');
SELECT is((SELECT count(*) FROM generate_series(0, 9999) g
            WHERE snowflake_from_public(snowflake_to_public(g)) <> g
               OR length(snowflake_to_public(g)) <> 14), 0::bigint,
          '10,000 consecutive IDs round trip at a fixed width');
SELECT is((SELECT count(DISTINCT snowflake_to_public(g)) FROM generate_series(0, 9999) g), 10000::bigint,
          'and give 10,000 texts');
-- Rotation: a text of the older key A still decodes.
SELECT is(snowflake_from_public('A3DH0M90E42XAG'), 1541815603606036480::bigint,
          'a text made under key A, no longer current, still decodes');
-- The tweak.
SELECT isnt(snowflake_to_public(42, 'orders'), snowflake_to_public(42), 'a tweak gives another text');
SELECT is(snowflake_from_public(snowflake_to_public(42, 'orders'), 'orders'), 42::bigint,
          'which decodes with the same tweak');
SELECT isnt(snowflake_from_public(snowflake_to_public(42, 'orders'), 'users'), 42::bigint,
            'and to another ID with another one (nothing is authenticated)');
SELECT is(snowflake_to_public(42, ''), snowflake_to_public(42), 'the tweak defaults to the empty text');

-- Texts that are no public ID: 22P02, with a hint.
SELECT throws_ok('SELECT snowflake_from_public(''B3DH0M90E42XA'')', '22P02',
                 'invalid public ID: "B3DH0M90E42XA"', 'a text one character short is refused');
SELECT matches((pg_temp.error_of('SELECT snowflake_from_public(''B3DH0M90E42XA'')')).hint,
               'snowflake_to_public', 'the hint says where public IDs come from');
SELECT throws_ok('SELECT snowflake_from_public(''B3DH0M90E42XA!'')', '22P02', NULL,
                 'a character outside base32 is refused');
SELECT throws_ok('SELECT snowflake_from_public(''C3DH0M90E42XAG'')', '22P02',
                 'invalid public ID: "C3DH0M90E42XAG"', 'a version no key has is refused');
SELECT matches((pg_temp.error_of('SELECT snowflake_from_public(''C3DH0M90E42XAG'')')).hint,
               'keep a key in the file while its texts are in use',
               'the hint says to keep old keys while their texts are in use');
SELECT throws_ok('SELECT snowflake_from_public(''B83H0M90E42XAG'')', '22P02', NULL,
                 'digits beyond 63 bits are refused');
SELECT throws_ok('SELECT snowflake_to_public(-1)', '22023', 'snowflake ID must not be negative',
                 'a negative ID is refused');

-- The key stays with superusers: an ordinary role can call the functions
-- and cannot read the setting, let alone the file.
CREATE ROLE snowflake_tap_public_reader;
SET ROLE snowflake_tap_public_reader;
SELECT is(snowflake_from_public(snowflake_to_public(7)), 7::bigint, 'an ordinary role can call the functions');
SELECT throws_ok('SHOW snowflake.public_id_keys_file', '42501', NULL, 'it cannot SHOW the setting');
SELECT throws_ok('SELECT current_setting(''snowflake.public_id_keys_file'')', '42501', NULL,
                 'nor read it with current_setting');
SELECT is((SELECT count(*) FROM pg_settings WHERE name = 'snowflake.public_id_keys_file'), 0::bigint,
          'pg_settings does not show it');
SELECT throws_ok('SELECT * FROM pg_file_settings', '42501', NULL, 'pg_file_settings is not its to read');
SELECT throws_ok(format('SELECT pg_read_file(%L)', 'global/pg_control'), '42501', NULL,
                 'nor can it read server files');
RESET ROLE;
SELECT is((SELECT context FROM pg_settings WHERE name = 'snowflake.public_id_keys_file'), 'sighup',
          'a superuser sees the setting: it takes effect at reload');

SELECT * FROM finish();
ROLLBACK;

-- The Crockford base32 text form.
CREATE EXTENSION IF NOT EXISTS snowflake;
\set SHOW_CONTEXT never

SELECT snowflake_to_base32(0), snowflake_to_base32(1), snowflake_to_base32(31), snowflake_to_base32(32);
SELECT snowflake_to_base32(1541815603606036480);
SELECT snowflake_to_base32(9223372036854775807);
SELECT length(snowflake_to_base32(1541815603606036480)) AS fixed_width;

-- Round trips, and the text sorts like the number (C collation).
SELECT count(*) AS round_trip_failures
  FROM (SELECT (g::bigint * 104729 * 1000003) % 9223372036854775807 AS id
          FROM generate_series(1, 5000) g) s
 WHERE snowflake_from_base32(snowflake_to_base32(id)) <> id;
SELECT bool_and(a < b) = bool_and(snowflake_to_base32(a) COLLATE "C" < snowflake_to_base32(b) COLLATE "C") AS sorts_like_numbers
  FROM (SELECT (g::bigint * 104729 * 1000003) % 9223372036854775807 AS a,
               (g::bigint * 104729 * 1000003) % 9223372036854775807 + g AS b
          FROM generate_series(1, 5000) g) s;

-- Case-insensitive; O reads as 0, I and L as 1; leading zeros optional.
SELECT snowflake_from_base32('1AJ4QFHNBH000') = snowflake_from_base32('1aj4qfhnbh000') AS case_insensitive;
SELECT snowflake_from_base32('1O'), snowflake_from_base32('1o'), snowflake_from_base32('I'),
       snowflake_from_base32('l'), snowflake_from_base32('L0');
SELECT snowflake_from_base32('7ZZZZZZZZZZZZ');

-- Anything else is rejected.
SELECT snowflake_from_base32('');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base32('1AJ4QFHNBH0000');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base32('1AJ4-QFHNB');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base32('U');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base32(' 12');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base32('12ü');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base32('8000000000000');
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_to_base32(-5);
\echo :LAST_ERROR_SQLSTATE
-- A long input is quoted in part: the message stays short however large the
-- argument (the whole of it used to be echoed, into the log line too).
SELECT snowflake_from_base32(repeat('1', 1000000));
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_from_base32('1234-' || repeat('ü', 100000));
\echo :LAST_ERROR_SQLSTATE

-- The edges of issue 27 (item 4) and the hints of issue 31 (item 6): each
-- error names the range or the fix, and no result wraps into the sign bit.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';
SET datestyle = 'ISO';

-- A span is at most the time the layout's IDs cover (69.7 years in
-- Twitter's): a longer one is an error naming that, not a wrapped number.
SELECT snowflake_id_span('69 years') > 0 AS sixty_nine_years;
SELECT snowflake_id_span('70 years');
SELECT snowflake_id_span('100 years');

-- An epoch past the end of timestamptz: the range is shown in ms, not as a
-- time the conversion cannot make.
SELECT snowflake_compose('2026-11-26 12:00:00+00', 0, 0, 0, 'time:10 sequence:1 epoch:9300000000000000');
SELECT snowflake_min_id('2026-01-01', 'time:10 sequence:1 epoch:9300000000000000');
SELECT snowflake_timestamp(1, 'time:10 sequence:1 epoch:9300000000000000');

-- The time field has 1 to 62 bits: the same rule in a layout's text and in
-- snowflake.timestamp_bits.
SELECT snowflake_decode(1, 'time:63 sequence:1');
SELECT snowflake_decode(1, 'time:62 sequence:1') AS sixty_two_bits;
SELECT min_val, max_val FROM pg_settings WHERE name = 'snowflake.timestamp_bits';

-- snowflake_set_bound: a time before the epoch (a typo in a year) or at or
-- after the last time the node issues in is an error naming the range.
SELECT snowflake_set_bound('1900-01-01');
SELECT snowflake_set_bound('2080-07-10 17:30:30.208+00');
SELECT snowflake_set_bound('2100-01-01');
SELECT snowflake_set_bound('infinity');
SELECT snowflake_set_bound('-infinity');

-- snowflake_generate: the hint fits the fault.
SELECT count(*) FROM snowflake_generate(0);
SELECT count(*) FROM snowflake_generate(10000001);

-- The layout in full, where the node says which one it uses.
SELECT layout FROM snowflake_status;
SELECT layout, problem FROM snowflake_node_identity();

-- After DISCARD ALL, snowflake_lastval() says the state was discarded.
SELECT snowflake_lastval();
SELECT snowflake_nextval() > 0 AS issued;
SELECT snowflake_lastval() > 0 AS defined;
DISCARD ALL;
SELECT snowflake_lastval();
SELECT snowflake_nextval() > 0 AS issued_again;
SELECT snowflake_lastval() > 0 AS defined_again;

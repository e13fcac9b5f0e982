-- snowflake_convert_column locks the table before it reads the largest key.
-- Another session has written a key above every new snowflake ID and not yet
-- committed; the conversion must wait for it, then see it and refuse (read
-- first, it would miss the row and convert the column anyway). Two sessions:
-- this one and a dblink connection. Not in one transaction: the converter
-- must see what this session commits.
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS snowflake;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT plan(6);

CREATE TABLE convert_race (id bigserial PRIMARY KEY, note text);
INSERT INTO convert_race (note) VALUES ('old');
SELECT dblink_connect('converter',
                      format('host=%s port=%s dbname=%s user=%s', current_setting('unix_socket_directories'),
                             current_setting('port'), current_database(), current_user)) AS connected \gset
SELECT pid AS converter_pid FROM dblink('converter', 'SELECT pg_backend_pid()') AS t(pid integer) \gset

BEGIN;
INSERT INTO convert_race VALUES (9000000000000000000, 'above every new ID, not committed yet');
SELECT dblink_send_query('converter', $$SELECT snowflake_convert_column('convert_race', 'id')$$) AS sent \gset
DO $$
BEGIN
    FOR i IN 1..3000 LOOP
        EXIT WHEN EXISTS (SELECT FROM pg_locks
                           WHERE relation = 'convert_race'::regclass AND NOT granted);
        PERFORM pg_sleep(0.01);
    END LOOP;
END
$$;
SELECT ok(EXISTS (SELECT FROM pg_locks WHERE pid = :converter_pid AND relation = 'convert_race'::regclass
                                         AND mode = 'AccessExclusiveLock' AND NOT granted),
          'the conversion waits for the table''s lock');
SELECT ok(NOT EXISTS (SELECT FROM pg_locks WHERE pid = :converter_pid AND relation = 'convert_race'::regclass
                                             AND granted),
          'and has read nothing of the table before it has the lock');
COMMIT;

SELECT throws_ok($$SELECT * FROM dblink_get_result('converter') AS t(result text)$$, '55000',
                 NULL, 'with the lock it sees the committed row, and refuses');
SELECT * FROM dblink_get_result('converter', false) AS t(result text);
SELECT matches((SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'convert_race'::regclass),
               '^nextval\(', 'the column keeps its sequence');

-- The table is replaced by another of the same name while the conversion
-- waits for its lock: the conversion must notice, not go on with the table
-- it was given under the new one's name.
CREATE TABLE convert_swap (id bigserial PRIMARY KEY);
BEGIN;
LOCK TABLE convert_swap IN ACCESS EXCLUSIVE MODE;
SELECT dblink_send_query('converter', $$SELECT snowflake_convert_column('convert_swap', 'id')$$) AS sent \gset
DO $$
BEGIN
    FOR i IN 1..3000 LOOP
        EXIT WHEN EXISTS (SELECT FROM pg_locks WHERE relation = 'convert_swap'::regclass AND NOT granted);
        PERFORM pg_sleep(0.01);
    END LOOP;
END
$$;
DROP TABLE convert_swap;
CREATE TABLE convert_swap (id bigserial PRIMARY KEY);
COMMIT;
SELECT throws_ok($$SELECT * FROM dblink_get_result('converter') AS t(result text)$$, '55000',
                 'relation public.convert_swap changed while snowflake_convert_column waited for its lock',
                 'a table replaced while the conversion waits is refused, by name');
SELECT * FROM dblink_get_result('converter', false) AS t(result text);
SELECT matches((SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'convert_swap'::regclass),
               '^nextval\(', 'the new table keeps its sequence');
SELECT dblink_disconnect('converter');

DROP TABLE convert_race, convert_swap;
SELECT * FROM finish();

-- The option doc/clients.md weighs and declines for JSON: a key column of a
-- type of its own, bigint underneath (int8's own I/O functions), which
-- to_json() writes as a JSON string because the type is not numeric. The
-- clients' tests create it to show what each driver then returns.
CREATE TYPE probe_id;
CREATE FUNCTION probe_id_in(cstring) RETURNS probe_id LANGUAGE internal IMMUTABLE STRICT AS 'int8in';
CREATE FUNCTION probe_id_out(probe_id) RETURNS cstring LANGUAGE internal IMMUTABLE STRICT AS 'int8out';
CREATE FUNCTION probe_id_recv(internal) RETURNS probe_id LANGUAGE internal IMMUTABLE STRICT AS 'int8recv';
CREATE FUNCTION probe_id_send(probe_id) RETURNS bytea LANGUAGE internal IMMUTABLE STRICT AS 'int8send';
CREATE TYPE probe_id (INPUT = probe_id_in, OUTPUT = probe_id_out,
                      RECEIVE = probe_id_recv, SEND = probe_id_send, LIKE = bigint);
CREATE CAST (bigint AS probe_id) WITHOUT FUNCTION AS IMPLICIT;
CREATE TABLE probe (id probe_id DEFAULT snowflake_nextval(), name text);
INSERT INTO probe (name) VALUES ('Ada');

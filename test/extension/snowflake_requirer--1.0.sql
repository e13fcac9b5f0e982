\echo Use "CREATE EXTENSION snowflake_requirer" to load this file. \quit
CREATE FUNCTION snowflake_requirer_id() RETURNS bigint
    LANGUAGE sql VOLATILE AS 'SELECT snowflake_nextval()';

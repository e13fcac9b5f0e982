-- snowflake_bench_floor 1.0: the floor of the snowflake benchmarks.
\echo Use "CREATE EXTENSION snowflake_bench_floor" to load this file. \quit

CREATE FUNCTION bench_floor() RETURNS bigint
    AS 'MODULE_PATHNAME', 'bench_floor'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION bench_floor() IS
    'Returns the next value of a per-backend counter: the cheapest call of a C function returning a bigint, the floor against which the benchmarks measure ID functions';

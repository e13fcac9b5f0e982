/*
 * snowflake_bench_floor: the floor of the SQL benchmarks in test/bench.
 *
 * bench_floor() costs what any C function returning a bigint costs a query
 * (the function call through fmgr and the executor's work per row) and
 * nothing else, so the time of a query calling it is the floor that the
 * benchmarks subtract to find the marginal cost of an ID function. It is
 * VOLATILE like snowflake_nextval(), so it is called once per row too.
 * It returns a per-backend counter rather than a constant so that nothing can
 * fold it away.
 */
#include "postgres.h"

#include "fmgr.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(bench_floor);

Datum bench_floor(PG_FUNCTION_ARGS) {
  static int64 calls = 0;

  PG_RETURN_INT64(++calls);
}

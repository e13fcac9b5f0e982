// Test-only: a fault on purpose, so that the sanitize layer (scripts/test.sh
// sanitize) can show it sees a sanitizer's report from a real server. The
// layer copies this file into its own copy of the tree (build/sanitize/src/pg/)
// before building snowflake.so there; it is in no other build, and no
// extension script defines its SQL function (the layer does, for one server).
//
//   snowflake_sanitize_fault('heap-overflow')   writes one byte past a new[]
//   snowflake_sanitize_fault('signed-overflow') adds 1 to INT_MAX (UBSan)
#include <climits>
#include <cstring>

#include "postgres.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(snowflake_sanitize_fault);
}

namespace {

// Volatile bounds keep the compiler from seeing the fault (and dropping it).
volatile int heap_size = 16;
volatile int largest_int = INT_MAX;

// Through a volatile pointer, which UBSan's object-size check cannot follow:
// the write is ASan's to report.
int heap_overflow() {
  char* const buffer = new char[heap_size];
  std::memset(buffer, 0, heap_size);
  char* volatile escaped = buffer;
  escaped[heap_size] = 1;  // one past the end
  int seen = buffer[0];
  delete[] buffer;
  return seen;
}

int signed_overflow() {
  return largest_int + 1;
}

}  // namespace

extern "C" Datum snowflake_sanitize_fault(PG_FUNCTION_ARGS) {
  const char* fault = text_to_cstring(PG_GETARG_TEXT_PP(0));
  if (std::strcmp(fault, "heap-overflow") == 0) PG_RETURN_INT32(heap_overflow());
  if (std::strcmp(fault, "signed-overflow") == 0) PG_RETURN_INT32(signed_overflow());
  ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("unknown fault \"%s\"", fault),
                  errhint("Use 'heap-overflow' or 'signed-overflow'.")));
  PG_RETURN_NULL();
}

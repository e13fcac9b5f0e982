// The C++/PostgreSQL error boundary.
//
// Two rules hold at every SQL-callable entry point:
// - No C++ exception crosses into PostgreSQL: SNOWFLAKE_FUNCTION wraps the
//   body in a try block and turns anything thrown into ereport(ERROR), raised
//   after the catch block has ended (so no exception object is alive while
//   PostgreSQL longjmps).
// - ereport(ERROR) is a longjmp: it must not unwind through a C++ frame that
//   owns an object with a destructor. Bodies therefore hold only plain values
//   (the core is noexcept and trivially destructible) when they call anything
//   that can raise an error.
#pragma once

#include "postgres.hpp"

namespace snowflake::pg {

using FunctionBody = Datum (*)(FunctionCallInfo);

// Calls body(fcinfo); a C++ exception becomes an internal error naming `name`.
Datum call_guarded(FunctionBody body, FunctionCallInfo fcinfo, const char* name);

}  // namespace snowflake::pg

// Defines the SQL-callable function `name` (C linkage, with its V1 info
// record); the braces that follow the macro are its body, with `fcinfo` in
// scope as in any PG_FUNCTION_ARGS function.
#define SNOWFLAKE_FUNCTION(name)                                    \
  static Datum name##_body(FunctionCallInfo);                       \
  extern "C" {                                                      \
  PG_FUNCTION_INFO_V1(name);                                        \
  }                                                                 \
  Datum name(PG_FUNCTION_ARGS) {                                    \
    return snowflake::pg::call_guarded(name##_body, fcinfo, #name); \
  }                                                                 \
  static Datum name##_body([[maybe_unused]] FunctionCallInfo fcinfo)

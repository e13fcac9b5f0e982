// The catch-all behind SNOWFLAKE_FUNCTION (see boundary.hpp).
#include "boundary.hpp"

#include <exception>

namespace snowflake::pg {

Datum call_guarded(FunctionBody body, FunctionCallInfo fcinfo, const char* name) {
  // Copied out of the exception, because the exception is destroyed when the
  // catch block ends and ereport must run after that.
  char what[256];
  try {
    return body(fcinfo);
  } catch (const std::exception& e) {
    strlcpy(what, e.what(), sizeof(what));
  } catch (...) {
    strlcpy(what, "unknown exception", sizeof(what));
  }
  ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                  errmsg("unexpected C++ exception in %s(): %s", name, what),
                  errhint("This is a bug in the snowflake extension; please report it.")));
  pg_unreachable();
}

}  // namespace snowflake::pg

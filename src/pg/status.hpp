// The privilege model of the status views (status.cpp, registry/status.cpp):
// reading a view is what a role is granted (pg_monitor by default), so each
// function behind one checks SELECT on its view: granting the view is enough,
// and calling the function directly needs the same grant.
#pragma once

#include "postgres.hpp"

namespace snowflake::pg {

// ereport(ERROR) unless the current user may SELECT from `view` (in the
// schema of the function being called). A view that does not exist refuses
// everyone, unless `missing_allows`: then the function's own EXECUTE grant,
// which fmgr has checked, is all there is (an extension script older than the
// view).
void require_view_privilege(FunctionCallInfo fcinfo, const char* view, bool missing_allows = false);

}  // namespace snowflake::pg

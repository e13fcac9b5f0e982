// Differences between the PostgreSQL majors the glue supports (design.md
// section 9), in one place.
#pragma once

#include "postgres.hpp"

extern "C" {
#include "utils/guc_tables.h"
}

namespace snowflake::pg::compat {

// The GUC record named `name`, a defined setting or a placeholder, or nullptr.
inline config_generic* find_setting_record(const char* name) {
#if PG_VERSION_NUM >= 160000
  int count = 0;
  config_generic** records = get_guc_variables(&count);
#else
  config_generic** records = get_guc_variables();
  const int count = GetNumConfigOptions();
#endif
  for (int i = 0; i < count; ++i)
    if (pg_strcasecmp(records[i]->name, name) == 0) return records[i];
  return nullptr;
}

}  // namespace snowflake::pg::compat

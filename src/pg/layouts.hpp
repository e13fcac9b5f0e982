// Layouts named in text, presets and specifications (src/core/layout_text.hpp),
// as snowflake.layout and the SQL functions' `layout` argument read them, with
// the errors that say what is wrong and where.
#pragma once

#include <cstddef>

#include "../core/layout.hpp"
#include "../core/layout_text.hpp"
#include "postgres.hpp"

namespace snowflake::pg {

// Why `text` (which parse_layout() refused as `parsed`) is not a layout: a
// DETAIL that names the character and the item at fault, and a HINT that
// shows the presets and the syntax. palloc'd.
struct LayoutTextError {
  const char* detail;
  const char* hint;
};
LayoutTextError explain_layout_text(const ParsedLayout& parsed, const char* text,
                                    std::size_t length);

// The layout of the SQL function's text argument `argno`, or an error
// (SQLSTATE 22023). Parsed once per call site, while the text stays the same
// (cached in fn_extra).
const Layout& layout_argument(FunctionCallInfo fcinfo, int argno);

}  // namespace snowflake::pg

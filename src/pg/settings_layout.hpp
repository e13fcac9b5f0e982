// The ID layout and its epoch as the configuration gives them
// (settings_layout.cpp), for settings.cpp, which defines every setting.
#pragma once

namespace snowflake::pg {

// Reads snowflake.layout, the four widths and snowflake.epoch from the
// configuration before they are defined, checks them and establishes
// settings.layout: a layout that is not valid is an error (at server start,
// it stops the server). While the server starts, a clock outside the
// layout's range is a WARNING, and the server starts.
void establish_configured_layout();

// Defines snowflake.layout, the four widths and snowflake.epoch.
void define_layout_settings();

// The value the configuration gives `name`, read before defining it:
// `fallback` if it is not set, an error (detail_format gets the name, min and
// max) if it is not an integer in [min, max].
int configured_int(const char* name, int fallback, int min, int max, const char* detail_format,
                   const char* hint);

}  // namespace snowflake::pg

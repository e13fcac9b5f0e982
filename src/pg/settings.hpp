// The snowflake.* settings (GUCs), all defined in settings.cpp.
#pragma once

#include <cstdint>

#include "../core/layout.hpp"

namespace snowflake::pg {

struct Settings {
  // Server start only (without the preload: the server's configuration when
  // the session loaded the library): the layout of the IDs and their epoch.
  // snowflake.layout, when set, gives the fields, their order and the unit
  // (and an epoch that snowflake.epoch, when set, replaces); the widths then
  // show its widths, and one set to another value stops the server.
  char* layout_text = nullptr;
  int timestamp_bits = kDefaultTimestampBits;
  int datacenter_bits = kDefaultDatacenterBits;
  int worker_bits = kDefaultWorkerBits;
  int sequence_bits = kDefaultSequenceBits;
  char* epoch_text = nullptr;
  Layout layout;

  // Reload: who this node is (-1 = unset), and the clock policy.
  int datacenter_id = -1;
  int worker_id = -1;
  int max_lead_ms = 0;
  int max_clock_backward_wait_ms = 1000;

  // Derived from datacenter_id and worker_id by their assign hooks: the node
  // field of this node's IDs, or -1 while it is not configured.
  int64_t node = -1;

  // Registry (issue 4, src/pg/registry/): the libpq connection string of the
  // registry database ("" = none) and the lease. Reload.
  char* registry = nullptr;
  int registry_lease_ms = 30000;
  // Derived from registry by its assign hook: it is not empty.
  bool registry_configured = false;

  // Public IDs (issue 40, public_id_keys.cpp): the path of the file of their keys
  // ("" = none). Reload; superusers only.
  char* public_id_keys_file = nullptr;
};

extern Settings settings;

// Defines every snowflake.* setting. While the server starts (preload), a
// layout that is not valid (or that the widths contradict), an epoch the
// layout cannot reach, or an ID that does not fit its field stops it with a
// message naming the values. Without
// the preload (a session loading the library) the layout is the server's
// configuration, never a session's value, and fixed for the session; a layout
// that is not valid, or one a session's connection options or role set, is an
// error, before anything is defined.
void define_settings();

// The node field, or ereport(ERROR) naming the setting that is not set.
int64_t configured_node();

}  // namespace snowflake::pg

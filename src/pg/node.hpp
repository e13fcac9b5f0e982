// The node's generator in shared memory (node.cpp). Its durable bound is in
// durable.hpp, its counters in counters.hpp.
#pragma once

#include "../core/generator.hpp"

namespace snowflake::pg {

// _PG_init (preload only): the shared-memory hooks that set up the generator,
// its durable bound and the backends' counter slots.
void request_node_memory();

// The generator, or nullptr when the library was not preloaded.
Generator* node_generator();

}  // namespace snowflake::pg

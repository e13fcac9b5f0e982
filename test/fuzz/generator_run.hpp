// The generator's part of the layout_arith fuzz target (generator_run.cpp).
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include "layout.hpp"

// Drives a generator in `layout` through operations the input chooses (calls
// at clock readings that jump anywhere, restores, raised floors, durable
// bounds), checking each outcome.
void run_generator(const snowflake::Layout& layout, FuzzedDataProvider& in);

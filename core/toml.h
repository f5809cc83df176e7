// toml++ as ccscope includes it to parse files it did not write. toml++ 3.3 (Debian 12) asserts,
// in builds without NDEBUG, where a table header starts with a character no key starts with
// ("[!]", "[[[1]]]"), found by tests/fuzz/inputs_fuzz.cc; without the check it throws the
// parse_error release builds throw (upstream's fix: marzer/tomlplusplus pull 301).
#pragma once

#ifndef TOML_ASSERT
#define TOML_ASSERT(expr) static_assert(true)
#endif
#include <toml++/toml.h>

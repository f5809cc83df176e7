// A bounded reader for the plain-data subset of Python's pickle format (protocols 2-5): dicts,
// lists, tuples, sets, str, bytes, int, float, bool, None and the memo, decoded into JSON. It is
// how PyTorch's Flight Recorder dumps (pickled by default) are read without Python. Nothing is
// ever executed: GLOBAL, REDUCE, BUILD and the other object opcodes leave a placeholder string
// ("<object module.name>") where Python would have built an object.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/status.h"

namespace ccscope::diagnostics {

struct PickleLimits {
  size_t max_input_bytes = size_t{64} << 20;
  size_t max_depth = 64;                // nested containers, and MARKs open at once
  size_t max_values = size_t{1} << 22;  // values the opcodes build
  size_t max_memo = size_t{1} << 22;    // memo entries
  // The JSON once shared (memo) references are copied out: values, and bytes of text.
  size_t max_output_values = size_t{1} << 23;
  size_t max_output_bytes = size_t{256} << 20;
};

struct PickleOptions {
  PickleLimits limits;
  // A str whose length prefix disagrees with its text (a dump edited with sed after it was
  // written, paths anonymised) is cut where the pickler's memo opcode for it stands instead.
  bool repair_string_lengths = false;
};

// True when `data` starts with the PROTO opcode and a protocol from 2 to 5.
bool looksLikePickle(std::string_view data);

// Decodes one pickle. Malformed, truncated, unsupported (PERSID, EXT, buffers, protocol 0/1
// text opcodes) or over-limit input is an invalid-argument error naming the byte offset.
// `repaired_strings`, when given, is set to the number of strs whose length was repaired.
core::Result<nlohmann::json> decodePickle(std::string_view data, const PickleOptions& options = {},
                                          size_t* repaired_strings = nullptr);

}  // namespace ccscope::diagnostics

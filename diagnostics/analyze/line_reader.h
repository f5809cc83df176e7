// LineReader: streams the lines of one input (plain text, gzip, or stdin) with bounded memory.
// Lines longer than kMaxLineBytes are truncated (the rest is skipped, the line still counts),
// NUL bytes are kept as they are, and a truncated or corrupt gzip stream ends the input with a
// note instead of an error: a partial log is still worth analysing.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ccscope::diagnostics {

inline constexpr size_t kMaxLineBytes = size_t{64} * 1024;

class LineReader {
 public:
  // path "-" reads standard input. Gzip is detected by content, not by name.
  static core::Result<std::unique_ptr<LineReader>> open(const std::string& path);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Next line without its terminator; false at end of input. The view stays valid until the
  // next call.
  bool next(std::string_view& line);
  long lineNumber() const { return line_number_; }
  // Non-empty when the input ended early (corrupt or truncated compressed data, read error).
  const std::string& note() const { return note_; }
  bool truncatedLine() const { return truncated_; }

 private:
  explicit LineReader(void* gz) : gz_(gz) {}
  bool fill();

  void* gz_ = nullptr;  // gzFile; zlib reads plain files transparently
  std::vector<char> buf_;
  size_t begin_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  bool truncated_ = false;
  long line_number_ = 0;
  std::string line_;
  std::string note_;
};

}  // namespace ccscope::diagnostics

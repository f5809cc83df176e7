#include "diagnostics/analyze/line_reader.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ccscope::diagnostics {
namespace {
constexpr size_t kChunkBytes = 1 << 20;
}

core::Result<std::unique_ptr<LineReader>> LineReader::open(const std::string& path) {
  int fd = path == "-" ? dup(STDIN_FILENO) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return core::errnoStatus("open", errno).prepend("cannot read '" + path + "'");
  }
  gzFile gz = gzdopen(fd, "rb");
  if (gz == nullptr) {
    ::close(fd);
    return core::Status(core::Code::kSystem, "cannot read '" + path + "': gzdopen failed");
  }
  gzbuffer(gz, 256 * 1024);
  std::unique_ptr<LineReader> reader(new LineReader(gz));
  reader->buf_.resize(kChunkBytes);
  return reader;
}

LineReader::~LineReader() {
  if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
}

// Refills buf_ after moving the unread tail to the front; false when nothing more arrives.
bool LineReader::fill() {
  if (eof_) return false;
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buf_.size()) return true;  // caller handles a full buffer
  const int n = gzread(static_cast<gzFile>(gz_), buf_.data() + end_,
                       static_cast<unsigned>(buf_.size() - end_));
  if (n <= 0) {
    eof_ = true;
    int err = Z_OK;
    const char* msg = gzerror(static_cast<gzFile>(gz_), &err);
    if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
      note_ = std::string("input ended early: ") + (msg ? msg : "read error");
    }
    return false;
  }
  end_ += static_cast<size_t>(n);
  return true;
}

bool LineReader::next(std::string_view& line) {
  line_.clear();
  truncated_ = false;
  for (;;) {
    const char* start = buf_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    const size_t avail = nl ? static_cast<const char*>(nl) - start : end_ - begin_;
    if (nl != nullptr && line_.empty() && !truncated_ && avail <= kMaxLineBytes) {
      begin_ += avail + 1;  // fast path: the whole line is in the buffer
      line = std::string_view(start, avail);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      ++line_number_;
      return true;
    }
    if (line_.size() < kMaxLineBytes) {
      line_.append(start, std::min(avail, kMaxLineBytes - line_.size()));
    }
    if (avail > kMaxLineBytes) truncated_ = true;
    if (nl != nullptr) {
      begin_ += avail + 1;
      break;
    }
    begin_ = end_;
    if (!fill()) {
      if (line_.empty() && !truncated_) return false;
      break;
    }
  }
  if (line_.size() >= kMaxLineBytes) truncated_ = true;
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  ++line_number_;
  line = line_;
  return true;
}

}  // namespace ccscope::diagnostics

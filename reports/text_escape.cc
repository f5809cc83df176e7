#include "reports/text_escape.h"

#include <limits>

#include "reports/diagnosis.h"

namespace ccscope::reports {

namespace {
constexpr size_t kUnlimited = std::numeric_limits<size_t>::max() / 2;

// sanitizeText() replaces newlines too; multi-line text (hover titles) keeps them.
std::string sanitizeLines(std::string_view text) {
  std::string out;
  size_t start = 0;
  while (true) {
    const size_t nl = text.find('\n', start);
    out += sanitizeText(text.substr(start, nl == std::string_view::npos ? nl : nl - start),
                        kUnlimited);
    if (nl == std::string_view::npos) return out;
    out += '\n';
    start = nl + 1;
  }
}

}  // namespace

std::string xmlEscape(std::string_view text) {
  const std::string clean = sanitizeLines(text);
  std::string out;
  out.reserve(clean.size() + 8);
  for (char c : clean) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string csvField(std::string_view text) {
  std::string clean = sanitizeText(text, kUnlimited);
  if (clean.find_first_of(",\"\n\r") == std::string::npos) return clean;
  std::string out = "\"";
  for (char c : clean) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string markdownCell(std::string_view text) {
  const std::string clean = sanitizeText(text, kUnlimited);
  std::string out;
  for (char c : clean) {
    if (c == '|')
      out += "\\|";
    else if (c == '<')
      out += "&lt;";
    else
      out += c;
  }
  return out;
}

}  // namespace ccscope::reports

// Escaping shared by the text writers: HTML/XML text and attributes, CSV fields. Input is
// sanitised first (invalid UTF-8 and control characters replaced), so the output always parses.
#pragma once

#include <string>
#include <string_view>

namespace ccscope::reports {

std::string xmlEscape(
    std::string_view text);  // & < > " ' escaped, newlines kept; text and attributes
std::string csvField(std::string_view text);      // RFC 4180: quoted when it holds , " or newlines
std::string markdownCell(std::string_view text);  // | and newlines escaped for a table cell

// Appends `item` to `out`, preceded by `sep` unless `out` is empty (building lists).
inline void appendItem(std::string& out, std::string_view sep, std::string_view item) {
  if (!out.empty()) out += sep;
  out += item;
}

}  // namespace ccscope::reports

// Text made safe for XML: every SVG picture and the course page put tokens,
// titles and transcripts into XML, and a token may be `<eos>`, `&` or a
// quote, a transcript may hold a stray byte. One escaper for all of them.
#pragma once
#include <string>
#include <string_view>

namespace qkv::viz {

// & < > " ' as entities; \r dropped; UTF-8 kept as it is. What XML 1.0
// cannot hold (bytes that are not well-formed UTF-8, control characters other
// than tab and newline, U+FFFE, U+FFFF) becomes U+FFFD, so the result always
// parses.
std::string xml_escape(std::string_view text);

}  // namespace qkv::viz

// xml_escape (qkv/viz/xml.hpp): a UTF-8 decoder that refuses what is not a
// character, and the entities XML needs.
#include <qkv/viz/xml.hpp>

#include <cstddef>

namespace qkv::viz {

namespace {

// The length of the UTF-8 sequence at text[i] and its code point, or 0 if
// the bytes there are not one well-formed character (a stray continuation
// byte, a truncated or overlong sequence, a surrogate, or beyond U+10FFFF).
size_t utf8_char(std::string_view text, size_t i, char32_t& code) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  if (length == 0 || i + length > text.size()) return 0;
  code = length == 1 ? lead : length == 2 ? (lead & 0x1Fu) : length == 3 ? (lead & 0x0Fu) : (lead & 0x07u);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3Fu);
  }
  static constexpr char32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};  // below these: overlong
  if (code < smallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    char32_t code = 0;
    size_t length = utf8_char(text, i, code);
    if (length == 0) {  // not UTF-8: one byte becomes U+FFFD
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    switch (code) {
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
      case '\r':
        break;
      default:
        // XML 1.0 allows tab, newline and U+0020 up; U+FFFE and U+FFFF are not characters.
        if ((code < 0x20 && code != '\t' && code != '\n') || code == 0xFFFE || code == 0xFFFF)
          out += "\xEF\xBF\xBD";
        else
          out.append(text.substr(i, length));
    }
    i += length;
  }
  return out;
}

}  // namespace qkv::viz

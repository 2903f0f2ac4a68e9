// viz::xml_escape: what every SVG picture and the course page put into XML.
// Expected strings follow from the XML 1.0 and UTF-8 specifications.
#include <doctest/doctest.h>

#include <qkv/viz/xml.hpp>

#include <string>

TEST_CASE("viz/xml_escape escapes markup and keeps UTF-8, replacing what is not") {
  using qkv::viz::xml_escape;
  CHECK(xml_escape("a<b & c>\"d\" 'e'") == "a&lt;b &amp; c&gt;&quot;d&quot; &#39;e&#39;");
  CHECK(xml_escape("注意力汇聚 — Nadaraya–Watson") == "注意力汇聚 — Nadaraya–Watson");  // passes unchanged
  CHECK(xml_escape("tab\tline\n") == "tab\tline\n");
  CHECK(xml_escape("a\r\nb") == "a\nb");
  // Not characters XML allows: a control byte, a stray continuation byte, an
  // overlong '/' (C0 AF), a UTF-16 surrogate (ED A0 80), a truncated sequence.
  const std::string replacement = "\xEF\xBF\xBD";
  CHECK(xml_escape("a\x01z") == "a" + replacement + "z");
  CHECK(xml_escape("a\x80z") == "a" + replacement + "z");
  CHECK(xml_escape("\xC0\xAF") == replacement + replacement);
  CHECK(xml_escape("\xED\xA0\x80") == replacement + replacement + replacement);
  CHECK(xml_escape("\xE6\xB3") == replacement + replacement);
}

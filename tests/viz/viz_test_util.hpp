// Helpers for the viz tests: SVG files parsed back as XML (pugixml), and
// environment variables set for one scope.
#pragma once
#include <doctest/doctest.h>
#include <pugixml.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/io_test_util.hpp"  // TempDir

namespace qkv::test {

// The SVG at `path`, which must be well-formed XML with an <svg> root.
inline pugi::xml_document load_svg(const std::filesystem::path& path) {
  pugi::xml_document doc;
  pugi::xml_parse_result result = doc.load_file(path.c_str());
  REQUIRE_MESSAGE(result, path.string() << ": " << result.description());
  REQUIRE(std::string(doc.document_element().name()) == "svg");
  return doc;
}

// Every element in `doc` whose class attribute is exactly `cls`.
inline std::vector<pugi::xml_node> with_class(const pugi::xml_document& doc, const std::string& cls) {
  std::vector<pugi::xml_node> out;
  for (const pugi::xpath_node& n : doc.select_nodes(("//*[@class='" + cls + "']").c_str())) out.push_back(n.node());
  return out;
}

// The text of every <text> element, in document order.
inline std::vector<std::string> texts(const pugi::xml_document& doc) {
  std::vector<std::string> out;
  for (const pugi::xpath_node& n : doc.select_nodes("//text")) out.push_back(n.node().child_value());
  return out;
}

inline bool has_text(const pugi::xml_document& doc, const std::string& s) {
  for (const std::string& t : texts(doc))
    if (t == s) return true;
  return false;
}

// The box a <text> element takes in the picture, estimated as qkv's pictures
// estimate text (0.6 em per character; 0.8 em above the baseline, 0.2 em
// below), turned by its rotate(-90 x y) and moved by the translate(dx,dy) of
// the groups around it.
struct TextBox {
  double x0, y0, x1, y1;
  std::string text, cls;
};
inline std::vector<TextBox> text_boxes(const pugi::xml_document& doc) {
  std::vector<TextBox> out;
  for (const pugi::xpath_node& found : doc.select_nodes("//text")) {
    pugi::xml_node t = found.node();
    const std::string s = t.child_value();
    size_t chars = 0;  // code points: count the bytes that start one
    for (char c : s) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    const double size = t.attribute("font-size").as_double(), x = t.attribute("x").as_double(),
                 y = t.attribute("y").as_double(), w = 0.6 * size * static_cast<double>(chars);
    const std::string anchor = t.attribute("text-anchor").value();
    // Along the text from its anchor: [a0, a1]; across it, from the baseline: [-0.8 em, 0.2 em].
    const double a0 = anchor == "end" ? -w : anchor == "middle" ? -w / 2 : 0, a1 = a0 + w;
    TextBox b{x + a0, y - 0.8 * size, x + a1, y + 0.2 * size, s, t.attribute("class").value()};
    const std::string transform = t.attribute("transform").value();
    if (!transform.empty()) {  // rotate(-90 x y): along the text is upwards, across it rightwards
      REQUIRE_MESSAGE(transform.rfind("rotate(-90 ", 0) == 0, transform);
      b = {x - 0.8 * size, y - a1, x + 0.2 * size, y - a0, s, b.cls};
    }
    for (pugi::xml_node g = t.parent(); g; g = g.parent()) {
      double dx = 0, dy = 0;
      if (std::sscanf(g.attribute("transform").value(), "translate(%lf,%lf)", &dx, &dy) == 2) {
        b.x0 += dx, b.x1 += dx, b.y0 += dy, b.y1 += dy;
      }
    }
    out.push_back(b);
  }
  return out;
}

// No two texts of the picture overlap, and each lies inside it: the check
// every qkv picture passes, whatever its titles and labels.
inline void check_text_layout(const pugi::xml_document& doc) {
  pugi::xml_node svg = doc.document_element();
  const double width = svg.attribute("width").as_double(), height = svg.attribute("height").as_double();
  std::vector<TextBox> boxes = text_boxes(doc);
  for (size_t i = 0; i < boxes.size(); ++i) {
    const TextBox& a = boxes[i];
    INFO("'" << a.text << "' (" << a.cls << ") at x " << a.x0 << " … " << a.x1 << ", y " << a.y0 << " … " << a.y1
             << " in " << width << " x " << height);
    CHECK(a.x0 >= 0);
    CHECK(a.y0 >= 0);
    CHECK(a.x1 <= width);
    CHECK(a.y1 <= height);
    for (size_t j = i + 1; j < boxes.size(); ++j) {
      const TextBox& b = boxes[j];
      INFO("and '" << b.text << "' (" << b.cls << ") at x " << b.x0 << " … " << b.x1 << ", y " << b.y0 << " … "
                   << b.y1);
      CHECK_FALSE((a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1));
    }
  }
}

// Sets (or, with nullopt, unsets) an environment variable until the end of the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace qkv::test

// Helpers for the viz tests: SVG files parsed back as XML (pugixml), and
// environment variables set for one scope.
#pragma once
#include <doctest/doctest.h>
#include <pugixml.hpp>

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

// Sets (or, with nullopt, unsets) an environment variable until the end of the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace qkv::test

// The shapes on a model picture's lines (viz::model_svg) checked against a
// trace: every arrow, line around the side, loop and cross line carries the
// shape its producer recorded, a module's output at data-port or the
// frame's input at data-port. The trace is either the viz::ModelTrace the
// picture was drawn from, or, for a picture drawn by another program (a
// lesson), the shapes each module's box records (data-inputs, data-outputs).
#pragma once
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <pugixml.hpp>

#include <qkv/viz/model_trace.hpp>

#include <map>
#include <string>
#include <vector>

namespace qkv::test {

// What one module's first call took and returned, each shape as "(1, 1, 32)".
struct TracedShapes {
  std::vector<std::string> inputs, outputs;
};

inline std::map<std::string, TracedShapes> traced_shapes(const viz::ModelTrace& trace) {
  std::map<std::string, TracedShapes> out;
  for (const viz::ModuleCall& c : trace.calls) {
    if (out.count(c.name)) continue;  // the first call of each
    TracedShapes& s = out[c.name];
    for (const viz::TracedTensor& t : c.inputs) s.inputs.push_back(fmt::format("{}", t.shape));
    for (const viz::TracedTensor& t : c.outputs) s.outputs.push_back(fmt::format("{}", t.shape));
  }
  return out;
}

// "(1, 1, 32) (1, 32, 64)" -> {"(1, 1, 32)", "(1, 32, 64)"}; "--" (none) -> {}.
inline std::vector<std::string> split_shapes(const std::string& text) {
  std::vector<std::string> out;
  size_t open = text.find('(');
  while (open != std::string::npos) {
    const size_t close = text.find(')', open);
    out.push_back(text.substr(open, close - open + 1));
    open = text.find('(', close);
  }
  return out;
}

// The shapes of every module drawn as a box or frame, by data-name.
inline std::map<std::string, TracedShapes> traced_shapes(const pugi::xml_document& doc) {
  std::map<std::string, TracedShapes> out;
  for (const pugi::xpath_node& n : doc.select_nodes("//*[@class='module']"))
    out[n.node().attribute("data-name").value()] = {split_shapes(n.node().attribute("data-inputs").value()),
                                                    split_shapes(n.node().attribute("data-outputs").value())};
  return out;
}

// Checks every line of the picture against `shapes`; returns how many lines were checked.
inline int check_arrow_shapes(const pugi::xml_document& doc, const std::map<std::string, TracedShapes>& shapes) {
  int checked = 0;
  for (const char* cls : {"flow", "skip", "loop", "cross"})
    for (const pugi::xpath_node& n : doc.select_nodes(fmt::format("//*[@class='{}']", cls).c_str())) {
      const pugi::xml_node g = n.node();
      const std::string from = g.attribute("data-from").value(), frame = g.attribute("data-frame").value();
      const size_t port = static_cast<size_t>(g.attribute("data-port").as_int());
      CAPTURE(cls);
      CAPTURE(from);
      CAPTURE(frame);
      CAPTURE(port);
      const bool input = from == "input";
      REQUIRE(shapes.count(input ? frame : from) == 1);
      const TracedShapes& s = shapes.at(input ? frame : from);
      const std::vector<std::string>& tensors = input ? s.inputs : s.outputs;
      REQUIRE(port < tensors.size());
      CHECK(std::string(g.attribute("data-shape").value()) == tensors[port]);
      ++checked;
    }
  return checked;
}

inline int check_arrow_shapes(const pugi::xml_document& doc, const viz::ModelTrace& trace) {
  return check_arrow_shapes(doc, traced_shapes(trace));
}

}  // namespace qkv::test

// viz::model_summary: a traced model as torchinfo's table; and the tree both
// pictures of a model are drawn from (model_tree.hpp).
#include <qkv/core/error.hpp>
#include <qkv/viz/model_summary.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>

#include "viz/common.hpp"
#include "viz/model_tree.hpp"

namespace qkv::viz {
namespace detail {

ModelTree model_tree(const ModelTrace& trace, const char* op) {
  if (trace.calls.empty()) fail("{}: the trace has no calls (make it with nn::trace)", op);
  ModelTree tree;
  tree.trace = &trace;
  std::vector<int> node_of(trace.calls.size(), -1);
  tree.nodes.push_back({0, 1, -1, {}, {0}});
  node_of[0] = 0;
  for (size_t i = 1; i < trace.calls.size(); ++i) {
    const ModuleCall& c = trace.calls[i];
    if (c.parent < 0 || static_cast<size_t>(c.parent) >= i)
      fail("{}: call {} ({}) has parent {}, which is not an earlier call", op, i, c.type, c.parent);
    const int parent = node_of[static_cast<size_t>(c.parent)];
    // The same module again under the same node: one more call of it.
    int found = -1;
    for (int n : tree.nodes[static_cast<size_t>(parent)].children) {
      const ModuleCall& other = tree.call_of(n);
      if (other.name == c.name && other.type == c.type) found = n;
    }
    if (found < 0) {
      found = static_cast<int>(tree.nodes.size());
      tree.nodes.push_back({static_cast<int>(i), 0, parent, {}, {}});
      tree.nodes[static_cast<size_t>(parent)].children.push_back(found);
    }
    tree.nodes[static_cast<size_t>(found)].count += 1;
    tree.nodes[static_cast<size_t>(found)].calls.push_back(static_cast<int>(i));
    node_of[i] = found;
  }
  return tree;
}

std::string shapes_text(const std::vector<TracedTensor>& tensors) {
  if (tensors.empty()) return "--";
  std::string s;
  for (const TracedTensor& t : tensors) {
    if (!s.empty()) s += ' ';
    s += fmt::format("{}", t.shape);
  }
  return s;
}

std::string count_text(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string short_name(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

}  // namespace detail

namespace {

struct Row {
  std::string layer, input, output, params, calls;
};

// Depth first; `prefix` is the tree's drawing for the levels above.
void rows(const detail::ModelTree& tree, int node, const std::string& prefix, bool last, int depth,
          std::vector<Row>& out) {
  const ModuleCall& c = tree.call_of(node);
  const detail::ModelNode& n = tree.nodes[static_cast<size_t>(node)];
  std::string label = node == 0 ? c.type : detail::short_name(c.name) + ": " + c.type;
  if (!c.note.empty()) label += " (" + c.note + ")";
  std::string branch = node == 0 ? "" : (last ? "└─" : "├─");
  out.push_back({prefix + branch + label, detail::shapes_text(c.inputs), detail::shapes_text(c.outputs),
                 detail::count_text(c.parameters), n.count > 1 ? fmt::format("× {}", n.count) : ""});
  const std::string below = node == 0 ? "" : prefix + (last ? "   " : "│  ");
  if (c.depth >= depth) return;
  for (size_t i = 0; i < n.children.size(); ++i)
    rows(tree, n.children[i], below, i + 1 == n.children.size(), depth, out);
}

}  // namespace

std::string model_summary(const ModelTrace& trace, int depth) {
  if (depth < 0) fail("model_summary: depth {} must be at least 0 (0: the model's row alone)", depth);
  detail::ModelTree tree = detail::model_tree(trace, "model_summary");
  std::vector<Row> table{{"Layer (name: type)", "Input shape", "Output shape", "Param #", "Calls"}};
  rows(tree, 0, "", true, depth, table);
  // Column widths in terminal cells (a box-drawing character or × is one cell).
  size_t w[5] = {0, 0, 0, 0, 0};
  for (const Row& r : table) {
    const std::string* cells[5] = {&r.layer, &r.input, &r.output, &r.params, &r.calls};
    for (size_t k = 0; k < 5; ++k) w[k] = std::max(w[k], static_cast<size_t>(detail::text_width(*cells[k])));
  }
  auto pad = [](const std::string& s, size_t width) {
    return s + std::string(width - static_cast<size_t>(detail::text_width(s)), ' ');
  };
  auto pad_left = [](const std::string& s, size_t width) {
    return std::string(width - static_cast<size_t>(detail::text_width(s)), ' ') + s;
  };
  const size_t total = w[0] + w[1] + w[2] + w[3] + w[4] + 8;
  const std::string rule(total, '=');
  std::string s = rule + "\n";
  for (size_t i = 0; i < table.size(); ++i) {
    const Row& r = table[i];
    std::string line = pad(r.layer, w[0]) + "  " + pad(r.input, w[1]) + "  " + pad(r.output, w[2]) + "  " +
                       pad_left(r.params, w[3]) + "  " + r.calls;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    s += line + "\n";
    if (i == 0) s += rule + "\n";
  }
  s += rule + "\n";
  s += fmt::format("Total params: {}\n", detail::count_text(trace.calls[0].parameters));
  s += fmt::format("Module calls traced: {}\n", trace.calls.size());
  s += rule + "\n";
  return s;
}

}  // namespace qkv::viz

// The autograd graph behind a tensor, in the spirit of micrograd's draw_dot,
// as a Graphviz DOT file.
//
// One node per op (its name, e.g. "MulBackward", and its output's shape) and
// one per leaf (its shape; filled when it requires grad), with an edge from
// each input to the op that read it. The root is drawn with a double border.
//
// Graphviz is not a dependency: save_graph always writes the .dot file and
// renders it to SVG only when Graphviz's `dot` is on the PATH. Without it,
// `apt-get install graphviz` and then `dot -Tsvg file.dot -o file.svg`.
#pragma once
#include <qkv/core/tensor.hpp>

#include <filesystem>
#include <string>

namespace qkv::viz {

std::string graph_dot(const Tensor& root);

struct GraphFiles {
  std::filesystem::path dot{}, svg{};  // svg empty when Graphviz's `dot` is not on the PATH
};

// Writes stem.dot, and stem.svg via `dot -Tsvg` if available. dot is given no
// file name (it reads stem.dot on its standard input and prints the SVG), so
// any stem is safe, "-V" too; the SVG is written as every picture is (a fresh
// file renamed into place). A dot that fails, is killed or prints no SVG is a
// qkv::Error naming the command; stem.dot is written either way.
GraphFiles save_graph(const std::filesystem::path& stem, const Tensor& root);

}  // namespace qkv::viz

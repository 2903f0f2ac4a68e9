// The calls of a ModelTrace as the tree both pictures draw: one node per
// module under each parent, a module called several times inside one call
// merged into one node that counts them. Internal to src/viz.
#pragma once
#include <qkv/viz/model_trace.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace qkv::viz::detail {

struct ModelNode {
  int call = 0;               // the module's first call (its shapes are the ones shown)
  int count = 1;              // how many calls were merged into this node
  int parent = -1;            // an index into ModelTree::nodes; -1 for the model
  std::vector<int> children;  // indices into ModelTree::nodes, in the order they first ran
  std::vector<int> calls{};   // every call merged here
};

struct ModelTree {
  std::vector<ModelNode> nodes;  // nodes[0] is the model
  const ModelTrace* trace = nullptr;
  const ModuleCall& call_of(int node) const {
    return trace->calls[static_cast<size_t>(nodes[static_cast<size_t>(node)].call)];
  }
};

// An Error naming `op` for a trace with no calls or a call whose parent is
// not an earlier call.
ModelTree model_tree(const ModelTrace& trace, const char* op);

// "(2, 10, 32)"; several tensors joined by spaces; "--" for none.
std::string shapes_text(const std::vector<TracedTensor>& tensors);
// 21320 -> "21,320"
std::string count_text(int64_t n);
// The last part of a dotted name ("encoder.blks.0" -> "0").
std::string short_name(const std::string& name);

}  // namespace qkv::viz::detail

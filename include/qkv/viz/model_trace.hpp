// What one traced forward of a model recorded: which module ran, inside
// which, with the shapes that went in and came out. nn::trace (nn/module.hpp)
// fills it; viz::model_summary and viz::model_svg (viz/model_summary.hpp)
// draw it. Plain data (names, shapes, numbers), so viz reads it without
// knowing about modules.
#pragma once
#include <qkv/core/shape.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace qkv::viz {

// A tensor that went into or came out of a call. One tensor object has one
// id across the whole trace, so a tensor that one call returns and another
// reads shows where the data flows (a residual path reads a block's input
// again after its sublayer).
//
// A tensor computed between modules (the heads split by a reshape, a
// concatenation, a sum) is a new object, so its id alone would not say where
// it came from; `from` does. It lists the ids of the traced tensors it was
// computed from, the nearest on each path back through the autograd graph
// (which nn::trace records, even under a NoGradGuard): attention's queries
// (B·h, Q, H/h) come from W_q's output (B, Q, H). Empty for a tensor that
// reached a module as it left another (its id is the link), and for one
// computed from no traced tensor (a fresh input, a parameter alone).
struct TracedTensor {
  int id = -1;
  Shape shape{};
  bool integer = false;  // an IntTensor: token ids, valid lengths
  std::vector<int> from{};
};

struct ModuleCall {
  std::string name;   // dotted name inside the model ("encoder.blks.0.attention"); "" for the model
  std::string type;   // its type_name(): "MultiHeadAttention"
  std::string extra;  // its extra_repr(): "num_hiddens=32, num_heads=4"
  int parent = -1;    // the call this one ran inside (an index into ModelTrace::calls); -1 for the model
  int depth = 0;      // 0 for the model, 1 for what ran directly inside it, …
  std::vector<TracedTensor> inputs, outputs;
  int64_t parameters = 0;  // the module's num_parameters(), its submodules' included
  // False when the module's forward opens no nn::TraceScope (a layer written
  // without one): it is still shown, where it sits in the model, with the
  // inputs of its first traced submodule and the outputs of its last one.
  bool traced = true;
  // What the caller said of this call that the module itself cannot know
  // (nn::trace_note): "causal mask" on a decoder's self-attention, whose
  // mask its block builds. Shown beside the type; "" for none.
  std::string note{};
};

struct ModelTrace {
  std::vector<ModuleCall> calls;  // in the order they started; calls[0] is the model itself
};

}  // namespace qkv::viz

// A model drawn from itself: the record of one traced forward (nn::trace,
// viz/model_trace.hpp) as a terminal table, as torchinfo's summary prints a
// PyTorch model, and as an SVG block diagram, as d2l draws the Transformer.
//
//   viz::ModelTrace t = nn::trace(model, [&] { model.forward(X, Y, lens); });
//   fmt::print("{}", viz::model_summary(t));
//   viz::save_model_svg("model.svg", t, {.title = "The Transformer"});
//
// Both show what ran, not what was declared: a flag that changes the heads,
// the blocks or the hidden size changes the shapes, the counts and the blocks
// drawn. A module called several times inside one call (a decoder's
// attention at every step) is one row or one box, marked "× n".
//
// What the picture leaves out on purpose: Dropout (the identity at
// evaluation; still in the table), the ops between modules (a reshape, a
// concatenation: the arrows run through them), a module's output read by its
// own next call (an RNN step's state into the next step), and the insides of
// modules deeper than `depth`.
#pragma once
#include <qkv/viz/model_trace.hpp>

#include <filesystem>
#include <string>

namespace qkv::viz {

// One row per module, as the model nests them:
//
//   Layer (type)                        Input shape      Output shape     Param #   Calls
//   EncoderDecoder                      (2, 10) …        (2, 10, 200)     21,320
//   ├─encoder: TransformerEncoder       (2, 10) (2)      (2, 10, 32)      …
//   │  ├─embedding: Embedding           (2, 10)          (2, 10, 32)      6,400
//
// Param # counts a module's parameters with its submodules' (each tensor
// once); the footer gives the model's total. Rows nested deeper than `depth`
// are left out (torchinfo's depth; the model is depth 0), their parameters
// still counted in the rows above them.
std::string model_summary(const ModelTrace& trace, int depth = 100);

struct ModelPictureOptions {
  std::string title{};
  // Modules nested deeper than this are drawn as one box (the model is depth
  // 0): 4 shows a Transformer's attention, add & norm and FFN as boxes.
  int depth = 4;
};

// The data flow of the model, as d2l draws the Transformer: a box per module
// (type, name, parameter count), a frame around a module's submodules, and
// arrows from each module to the modules that read its output, labelled with
// the shape that left it. The trace says who read what: a tensor's id, or,
// for a tensor made by ops between modules (the heads split by a reshape),
// the traced tensors it came from (TracedTensor::from). Inside a frame each
// module stands one row below the deepest module it reads, so modules that
// read the same tensors stand side by side (W_q, W_k and W_v; encoder and
// decoder). A tensor read rows further down (the residual into add & norm)
// runs around the side, in the frame's gutter, and so does one read back by
// an earlier module called again (a decoder's hidden state into its next
// step's attention); a tensor from another branch (the encoder's output into
// the decoder's cross-attention) runs between the branches. Several outputs
// that one op outside any module combines (softmax(Q·Kᵀ)·V) join below
// their modules. A list of n blocks of one type is its first block opened
// and the others one box each.
//
// Each module's <g> starts with a <title> (its name, type, shapes in and out,
// parameters), which a browser shows on hover where the SVG is inline or an
// <object>. Class names for tests and stylesheets:
//   <g class="module" data-name data-type data-params data-calls data-inputs data-outputs>
//   <g class="flow|skip|loop|cross" data-frame data-from data-port data-to data-shape data-read>
// flow: to the next row; skip: around the side, downwards; loop: around the
// side, upwards; cross: between branches. data-from is a module's dotted name
// or "input" (the input of the frame data-frame names), data-port which of
// its outputs (or of the frame's inputs) the line carries, data-shape that
// tensor's traced shape, data-read the shape the reader got it in.
std::string model_svg(const ModelTrace& trace, const ModelPictureOptions& opt = {});
void save_model_svg(const std::filesystem::path& file, const ModelTrace& trace, const ModelPictureOptions& opt = {});

}  // namespace qkv::viz

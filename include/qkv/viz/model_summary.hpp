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
// concatenation), and the insides of modules deeper than `depth`.
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

// Boxes for the modules (type, name, parameter count), a frame around a
// module's submodules, arrows in the order they ran labelled with the shape
// that flowed, and a line on the side where a tensor is read again further
// down (a residual path) or comes from another branch (the encoder's output
// into the decoder's cross-attention). A list of n blocks of one type is
// drawn as its first block opened and the others as one box each. Encoder
// and decoder (the model's submodules that have submodules of their own)
// stand side by side.
//
// Class names for tests and stylesheets: every module's box or frame is a
// <g class="module" data-name="…" data-type="…" data-params="…">, every arrow
// between modules a <g class="flow" data-shape="(2, 10, 32)"> with its label.
std::string model_svg(const ModelTrace& trace, const ModelPictureOptions& opt = {});
void save_model_svg(const std::filesystem::path& file, const ModelTrace& trace, const ModelPictureOptions& opt = {});

}  // namespace qkv::viz

// 001 快速了解's figure of attention's 计算过程 (the computation), drawn from
// the numbers a program computed, as an SVG file:
//
//   stage 1  Query against each Keyᵢ: a score sᵢ = F(Query, Keyᵢ)
//   stage 2  softmax of the scores: the weights aᵢ (each with a bar as long as aᵢ)
//   stage 3  aᵢ · Valueᵢ summed: the attention value Σᵢ aᵢ · Valueᵢ
//
// One row per key. Vectors are printed with 2 decimals, scores and weights
// with 3, so the figure can be read against a transcript. It draws what it is
// given and checks only that the shapes fit together: query (d), keys (n, d),
// scores (n), weights (n), values (n, dv), output (dv); anything else is a
// qkv::Error naming the argument and the shapes. It leaves out what the
// heatmaps show: many queries at once, masking, batches.
#pragma once
#include <qkv/core/tensor.hpp>

#include <filesystem>
#include <string>

namespace qkv::viz {

struct ComputationFigure {
  std::string title{};
  std::string score_name = "F(Query, Keyᵢ)";  // the similarity used in stage 1, e.g. "Query · Keyᵢ"
  // The letters of a score and a weight: 001 writes sᵢ and aᵢ, 003 (d2l) a(q, kᵢ) and α(q, kᵢ).
  std::string score_symbol = "s", weight_symbol = "a";
  Tensor query, keys, scores, weights, values, output;
};

std::string computation_svg(const ComputationFigure& f);
void save_computation_svg(const std::filesystem::path& file, const ComputationFigure& f);

}  // namespace qkv::viz

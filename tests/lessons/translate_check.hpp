// What lessons 08 and 11 must hold of the model they save: `translate`
// (lessons/translate.cpp), given <out>/model.safetensors and d2l's four
// sentences, translates each exactly as the lesson itself did in the same
// test run (its results.json: d2l_<i>_source, d2l_<i>_translation and
// d2l_<i>_attention), attention bit for bit, since saving is exact and the
// model runs the same operations on the same numbers; and each attention row
// is a softmax, summing to 1.
#pragma once
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "plain_bleu.hpp"
#include "run_lesson.hpp"

namespace qkv::lesson_test {

// `text` as one shell word: in single quotes, each ' written as '\''.
inline std::string shell_quote(const std::string& text) {
  std::string quoted(1, '\'');
  for (char c : text) {
    if (c == '\'')
      quoted.append("'\\''");
    else
      quoted.push_back(c);
  }
  quoted.push_back('\'');
  return quoted;
}

// Each row of the row-major (rows, cols) `values` sums to 1 (a softmax, up to float rounding).
inline void check_rows_sum_to_one(const std::vector<float>& values, const std::vector<int64_t>& shape) {
  REQUIRE(shape.size() == 2);
  const auto rows = static_cast<size_t>(shape[0]), cols = static_cast<size_t>(shape[1]);
  REQUIRE(values.size() == rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (size_t c = 0; c < cols; ++c) sum += values[r * cols + c];
    INFO("row " << r);
    CHECK(std::abs(sum - 1) <= 1e-5);
  }
}

// `translate` run on the model a lesson saved in `lesson_out`; `lesson_results` is that run's "results".
inline void check_saved_model_translates_as_lesson(const std::filesystem::path& lesson_out,
                                                   const nlohmann::json& lesson_results) {
  REQUIRE(lesson_results.at("model_file").get<std::string>() == "model.safetensors");
  const std::filesystem::path model = lesson_out / "model.safetensors", out = lesson_out / "translate";
  REQUIRE(std::filesystem::exists(model));
  std::string sentences;
  for (int i = 0; i < 4; ++i)
    sentences.append(
        fmt::format(" {}", shell_quote(lesson_results.at(fmt::format("d2l_{}_source", i)).get<std::string>())));
  Run r = run_program("translate",
                      fmt::format("--model '{}' --out '{}' --color never{}", model.string(), out.string(), sentences),
                      lesson_out);
  INFO(r.output);
  REQUIRE(r.status == 0);
  std::ifstream in(out / "results.json");
  REQUIRE(in);
  const nlohmann::json doc = nlohmann::json::parse(in);
  const nlohmann::json& translations = doc.at("translations");
  REQUIRE(translations.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    INFO("d2l sentence " << i);
    const nlohmann::json& t = translations[i];
    CHECK(t.at("translation").get<std::string>() ==
          lesson_results.at(fmt::format("d2l_{}_translation", i)).get<std::string>());
    const nlohmann::json& lesson_attention = lesson_results.at(fmt::format("d2l_{}_attention", i));
    const std::vector<int64_t> shape = t.at("attention").at("shape").get<std::vector<int64_t>>();
    const std::vector<float> values = t.at("attention").at("values").get<std::vector<float>>();
    CHECK(shape == lesson_attention.at("shape").get<std::vector<int64_t>>());
    CHECK(values == lesson_attention.at("values").get<std::vector<float>>());  // exact: the same model
    check_rows_sum_to_one(values, shape);
    // The source is the sentence's words and <eos> (d2l's sentences are short and known).
    std::vector<std::string> words =
        split_spaces(lesson_results.at(fmt::format("d2l_{}_source", i)).get<std::string>());
    words.push_back("<eos>");
    CHECK(t.at("source_tokens").get<std::vector<std::string>>() == words);
    CHECK(std::filesystem::exists(out / t.at("picture").get<std::string>()));
  }
}

}  // namespace qkv::lesson_test

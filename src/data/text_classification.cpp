// The "label<TAB>sentence" reader: one line, one example.
#include <qkv/core/error.hpp>
#include <qkv/data/text_classification.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>

#include "read_text.hpp"

namespace qkv::data {

LabeledText read_text_classification(const std::string& path, int64_t num_classes) {
  constexpr const char* op = "read_text_classification";
  if (num_classes < 0) fail("{}: '{}': num_classes {} must be >= 0 (0: the largest label + 1)", op, path, num_classes);
  std::string text = detail::read_text_file(path, op);
  LabeledText out;
  std::vector<int64_t> labels;
  for (auto [line_number, line] : detail::numbered_lines(text)) {
    size_t tab = line.find('\t');
    if (tab == std::string_view::npos)
      fail("{}: '{}': line {} has no tab; expected 'label<TAB>sentence': '{}'", op, path, line_number,
           detail::shorten(line));
    if (line.find('\t', tab + 1) != std::string_view::npos)
      fail("{}: '{}': line {} has more than one tab; expected 'label<TAB>sentence': '{}'", op, path, line_number,
           detail::shorten(line));

    // The label: all digits, read whole (from_chars would accept "1x" as 1).
    std::string_view field = line.substr(0, tab);
    int64_t label = -1;
    auto [end, err] = std::from_chars(field.data(), field.data() + field.size(), label);
    bool digits_only =
        !field.empty() && std::all_of(field.begin(), field.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits_only || err != std::errc() || end != field.data() + field.size())
      fail("{}: '{}': line {}: label '{}' is not a class id (an integer >= 0)", op, path, line_number, field);
    // num_classes is the largest label + 1, which must fit in int64 too.
    if (label == INT64_MAX)
      fail("{}: '{}': line {}: label {} is too large (the number of classes, label + 1, overflows int64)", op, path,
           line_number, label);
    if (num_classes > 0 && label >= num_classes)
      fail("{}: '{}': line {}: label {} is not one of the {} classes 0 … {}", op, path, line_number, label, num_classes,
           num_classes - 1);

    std::vector<std::string> tokens = detail::split_spaces(preprocess_nmt(line.substr(tab + 1)));
    if (tokens.empty()) fail("{}: '{}': line {} has an empty sentence", op, path, line_number);
    out.tokens.push_back(std::move(tokens));
    labels.push_back(label);
  }
  // A file with no example is a mistake (a wrong path, a truncated copy), as
  // load_data_nmt says of a corpus with no pair: zero examples would train on
  // nothing and report an accuracy of 0/0.
  if (labels.empty()) fail("{}: '{}' has no examples (the file is empty or blank)", op, path);
  out.num_classes = num_classes > 0 ? num_classes : *std::max_element(labels.begin(), labels.end()) + 1;
  out.labels = IntTensor(std::move(labels), Shape{static_cast<int64_t>(out.tokens.size())});
  return out;
}

}  // namespace qkv::data

// Text to arrays for machine translation, d2l §10.5. Every function here is
// a plain loop over bytes or tokens; the comments say what d2l's Python does.
#include <qkv/core/error.hpp>
#include <qkv/data/nmt.hpp>

#include <cstdint>
#include <new>
#include <stdexcept>

#include "read_text.hpp"

namespace qkv::data {

// --- reading ---------------------------------------------------------------------

std::string read_data_nmt(const std::string& path) { return detail::read_text_file(path, "read_data_nmt"); }

// --- preprocessing -----------------------------------------------------------------

namespace {
// Lowercase one UTF-8 text and turn non-breaking spaces into spaces, byte by
// byte. NOTE: only ASCII and the capitals French uses are lowercased:
//   A–Z                      -> a–z
//   U+00C0–U+00DE (À … Þ)    -> U+00E0–U+00FE, except U+00D7 (×)   [C3 80–9E -> C3 A0–BE]
//   U+0152 Œ -> U+0153 œ     [C5 92 -> C5 93]
//   U+0178 Ÿ -> U+00FF ÿ     [C5 B8 -> C3 BF]
//   U+00A0, U+202F (no-break spaces) -> ' '   [C2 A0, E2 80 AF]
// Everything else passes through unchanged. Reading bytes is safe: in UTF-8
// a lead byte such as C3 never appears inside another character.
std::string lowercase_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    auto next = [&](size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0; };
    if (c >= 'A' && c <= 'Z') {
      out += static_cast<char>(c - 'A' + 'a');
    } else if (c == 0xC3 && next(1) >= 0x80 && next(1) <= 0x9E && next(1) != 0x97) {
      out += '\xC3';
      out += static_cast<char>(next(1) + 0x20);
      ++i;
    } else if (c == 0xC5 && next(1) == 0x92) {
      out += "\xC5\x93";  // Œ -> œ
      ++i;
    } else if (c == 0xC5 && next(1) == 0xB8) {
      out += "\xC3\xBF";  // Ÿ -> ÿ
      ++i;
    } else if (c == 0xC2 && next(1) == 0xA0) {
      out += ' ';
      ++i;
    } else if (c == 0xE2 && next(1) == 0x80 && next(2) == 0xAF) {
      out += ' ';
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

bool is_punctuation(char c) { return c == ',' || c == '.' || c == '!' || c == '?'; }
}  // namespace

std::string preprocess_nmt(std::string_view text) {
  std::string lower = lowercase_utf8(text);
  // d2l: out = [' ' + char if i > 0 and no_space(char, text[i - 1]) else char ...]
  // where no_space(char, prev) = char in ',.!?' and prev != ' '.
  std::string out;
  out.reserve(lower.size() + lower.size() / 8);
  for (size_t i = 0; i < lower.size(); ++i) {
    if (i > 0 && is_punctuation(lower[i]) && lower[i - 1] != ' ') out += ' ';
    out += lower[i];
  }
  return out;
}

// --- tokenizing --------------------------------------------------------------------

ParallelTokens tokenize_nmt(std::string_view text, std::optional<int64_t> num_examples) {
  if (num_examples && *num_examples < 0) fail("tokenize_nmt: num_examples {} must be >= 0", *num_examples);
  ParallelTokens out;
  for (auto [line_number, line] : detail::numbered_lines(text)) {
    if (num_examples && static_cast<int64_t>(out.source.size()) == *num_examples) break;
    size_t tab = line.find('\t');
    if (tab == std::string_view::npos)
      fail("tokenize_nmt: line {} has no tab; expected 'source<TAB>target': '{}'", line_number, detail::shorten(line));
    if (line.find('\t', tab + 1) != std::string_view::npos)
      fail("tokenize_nmt: line {} has more than one tab; expected 'source<TAB>target': '{}'", line_number,
           detail::shorten(line));
    std::vector<std::string> source = detail::split_spaces(line.substr(0, tab));
    std::vector<std::string> target = detail::split_spaces(line.substr(tab + 1));
    if (source.empty() || target.empty())
      fail("tokenize_nmt: line {} has an empty {} side: '{}'", line_number, source.empty() ? "source" : "target",
           detail::shorten(line));
    out.source.push_back(std::move(source));
    out.target.push_back(std::move(target));
  }
  return out;
}

// --- arrays ------------------------------------------------------------------------

namespace {
template <class T>
std::vector<T> truncate_pad_impl(std::vector<T> line, int64_t num_steps, const T& padding_token) {
  if (num_steps <= 0) fail("truncate_pad: num_steps {} must be positive", num_steps);
  try {
    line.resize(static_cast<size_t>(num_steps), padding_token);  // cuts, or pads at the end
  } catch (const std::bad_alloc&) {
    fail("truncate_pad: out of memory padding a line to num_steps {} ({} bytes)", num_steps,
         static_cast<uint64_t>(num_steps) * sizeof(T));
  } catch (const std::length_error&) {
    fail("truncate_pad: num_steps {} is too large to allocate", num_steps);
  }
  return line;
}
}  // namespace

std::vector<int64_t> truncate_pad(std::vector<int64_t> line, int64_t num_steps, int64_t padding_token) {
  return truncate_pad_impl(std::move(line), num_steps, padding_token);
}

std::vector<std::string> truncate_pad(std::vector<std::string> line, int64_t num_steps,
                                      const std::string& padding_token) {
  return truncate_pad_impl(std::move(line), num_steps, padding_token);
}

namespace {
TokenArray build_array_impl(const TokenLines& lines, const Vocab& vocab, int64_t num_steps, bool append_eos,
                            const char* op) {
  if (num_steps <= 0) fail("{}: num_steps {} must be positive", op, num_steps);
  if (!vocab.contains("<pad>")) fail("{}: the vocabulary has no '<pad>' token to pad with", op);
  if (append_eos && !vocab.contains("<eos>")) fail("{}: the vocabulary has no '<eos>' token to end lines with", op);
  const int64_t pad = vocab["<pad>"];
  const int64_t N = static_cast<int64_t>(lines.size()), T = num_steps;

  IntTensor array = IntTensor::empty({N, T});
  IntTensor valid_len = IntTensor::empty({N});
  for (int64_t n = 0; n < N; ++n) {
    std::vector<int64_t> ids = vocab[lines[static_cast<size_t>(n)]];
    if (append_eos) ids.push_back(vocab["<eos>"]);
    ids = truncate_pad(std::move(ids), T, pad);
    // d2l: valid_len = (array != vocab['<pad>']).sum(1)
    int64_t count = 0;
    for (int64_t t = 0; t < T; ++t) {
      array.data()[n * T + t] = ids[static_cast<size_t>(t)];
      count += ids[static_cast<size_t>(t)] != pad;
    }
    valid_len.data()[n] = count;
  }
  return {array, valid_len};
}
}  // namespace

TokenArray build_array_nmt(const TokenLines& lines, const Vocab& vocab, int64_t num_steps) {
  return build_array_impl(lines, vocab, num_steps, /*append_eos=*/true, "build_array_nmt");
}

TokenArray build_array(const TokenLines& lines, const Vocab& vocab, int64_t num_steps) {
  return build_array_impl(lines, vocab, num_steps, /*append_eos=*/false, "build_array");
}

// --- all at once -------------------------------------------------------------------

NMTData load_data_nmt(const std::string& path, int64_t num_steps, int64_t min_freq,
                      std::optional<int64_t> num_examples) {
  if (num_steps <= 0) fail("load_data_nmt: num_steps {} must be positive", num_steps);
  if (min_freq < 0) fail("load_data_nmt: min_freq {} must be >= 0", min_freq);
  std::string text = preprocess_nmt(read_data_nmt(path));
  ParallelTokens tokens;
  try {
    tokens = tokenize_nmt(text, num_examples);
  } catch (const Error& e) {
    fail("load_data_nmt: '{}': {}", path, e.what());  // say which file the line is in
  }
  if (tokens.source.empty() && num_examples.value_or(1) != 0)
    fail("load_data_nmt: '{}' has no sentence pairs (the file is empty or blank)", path);
  const std::vector<std::string> reserved = {"<pad>", "<bos>", "<eos>"};
  Vocab src_vocab(tokens.source, min_freq, reserved);
  Vocab tgt_vocab(tokens.target, min_freq, reserved);
  TokenArray src = build_array_nmt(tokens.source, src_vocab, num_steps);
  TokenArray tgt = build_array_nmt(tokens.target, tgt_vocab, num_steps);
  return {src.array, src.valid_len, tgt.array, tgt.valid_len, std::move(src_vocab), std::move(tgt_vocab)};
}

}  // namespace qkv::data

// A trained translation model in one safetensors file (translation_model.hpp).
#include "translation_model.hpp"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace qkv::lesson {

namespace {

constexpr const char* kSeq2Seq = "seq2seq_attention";
constexpr const char* kTransformer = "transformer";
// The largest size each key can have: the bound of the flag of lessons 08 and
// 11 that sets it (their --help states it). A model they saved is within
// these; a larger size in a file is damage, and building the model from it
// would ask for memory (16 GRU layers of 65536 would be 400 GB) before its
// weights could be checked against the file's tensors.
constexpr int64_t kMaxNumSteps = 256, kMaxHiddens = 1024, kMaxEmbed = 1024, kMaxLayers = 16, kMaxFfn = 4096,
                  kMaxHeads = 64, kMaxBlocks = 16;

// The metadata as it is read: each value looked up by key, its errors naming the key and the file.
struct MetadataReader {
  const io::Metadata& metadata;
  std::string where;  // "load_translation_model: 'out/…/model.safetensors'"

  const std::string& text(const std::string& key) const {
    auto it = metadata.find(key);
    if (it == metadata.end())
      fail("{}: the metadata has no key '{}': the file is not a translation model saved by lessons 08 or 11", where,
           key);
    return it->second;
  }
  int64_t size(const std::string& key, int64_t max) const {
    const std::string& s = text(key);
    int64_t value = 0;
    const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || error != std::errc() || end != s.data() + s.size() || value < 1 || value > max)
      fail("{}: metadata '{}' is \"{}\", not a whole number from 1 to {}", where, key, s, max);
    return value;
  }
  float probability(const std::string& key) const {  // in [0, 1)
    const std::string& s = text(key);
    // std::strtof: libc++ (emscripten's, macOS's) has no std::from_chars for float.
    char* end = nullptr;
    const float value = std::strtof(s.c_str(), &end);
    const bool whole = !s.empty() && !std::isspace(static_cast<unsigned char>(s[0])) && end == s.c_str() + s.size();
    if (!whole || !(value >= 0 && value < 1))
      fail("{}: metadata '{}' is \"{}\", not a number in [0, 1)", where, key, s);
    return value;
  }
  bool flag(const std::string& key) const {
    const std::string& s = text(key);
    if (s != "true" && s != "false") fail("{}: metadata '{}' is \"{}\", not true or false", where, key, s);
    return s == "true";
  }
  // The tokens in id order: <unk> first (data::Vocab's id 0), each token once.
  data::Vocab vocab(const std::string& key) const {
    const std::string& s = text(key);
    std::vector<std::string> tokens;
    try {
      tokens = nlohmann::json::parse(s).get<std::vector<std::string>>();
    } catch (const nlohmann::json::exception& e) {
      fail("{}: metadata '{}' is not a JSON list of strings ({})", where, key, e.what());
    }
    if (tokens.empty() || tokens.front() != "<unk>")
      fail("{}: metadata '{}' must start with \"<unk>\" (id 0), it starts with {}", where, key,
           tokens.empty() ? std::string("nothing") : "\"" + tokens.front() + "\"");
    // Vocab gives <unk> id 0 and the reserved tokens the next ids in order: the list itself.
    const std::vector<std::string> rest(tokens.begin() + 1, tokens.end());
    try {
      return data::Vocab(std::vector<std::string>{}, 0, rest);
    } catch (const Error& e) {
      fail("{}: metadata '{}': {}", where, key, e.what());  // a token given twice
    }
  }
};

std::string vocab_json(const data::Vocab& vocab) { return nlohmann::json(vocab.idx_to_token()).dump(); }

}  // namespace

std::string TranslationModel::describe() const {
  const TranslationModelConfig& c = config;
  if (c.architecture == kSeq2Seq)
    return fmt::format("{}'s GRU encoder + Bahdanau-attention decoder (E {}, H {}, {} layer(s))", c.trained_by,
                       c.embed_size, c.num_hiddens, c.num_layers);
  return fmt::format("{}'s Transformer (H {}, {} heads, {} blocks, F {})", c.trained_by, c.num_hiddens, c.num_heads,
                     c.num_blks, c.ffn_num_hiddens);
}

std::shared_ptr<nn::EncoderDecoder> build_translation_model(const TranslationModelConfig& c, int64_t src_vocab_size,
                                                            int64_t tgt_vocab_size, Generator& gen) {
  if (c.architecture == kSeq2Seq) {
    if (c.embed_size < 1 || c.num_hiddens < 1 || c.num_layers < 1)
      fail("build_translation_model: {}: embed_size {}, num_hiddens {} and num_layers {} must be at least 1", kSeq2Seq,
           c.embed_size, c.num_hiddens, c.num_layers);
    auto encoder =
        std::make_shared<nn::Seq2SeqEncoder>(src_vocab_size, c.embed_size, c.num_hiddens, c.num_layers, c.dropout, gen);
    auto decoder = std::make_shared<nn::Seq2SeqAttentionDecoder>(tgt_vocab_size, c.embed_size, c.num_hiddens,
                                                                 c.num_layers, c.dropout, gen);
    return std::make_shared<nn::EncoderDecoder>(encoder, decoder);
  }
  if (c.architecture == kTransformer) {
    if (c.num_hiddens < 1 || c.ffn_num_hiddens < 1 || c.num_heads < 1 || c.num_blks < 1)
      fail(
          "build_translation_model: {}: num_hiddens {}, ffn_num_hiddens {}, num_heads {}, num_blks {} must be at "
          "least 1",
          kTransformer, c.num_hiddens, c.ffn_num_hiddens, c.num_heads, c.num_blks);
    auto encoder = std::make_shared<nn::TransformerEncoder>(src_vocab_size, c.num_hiddens, c.ffn_num_hiddens,
                                                            c.num_heads, c.num_blks, c.dropout, c.use_bias, gen);
    auto decoder = std::make_shared<nn::TransformerDecoder>(tgt_vocab_size, c.num_hiddens, c.ffn_num_hiddens,
                                                            c.num_heads, c.num_blks, c.dropout, gen);
    return std::make_shared<nn::EncoderDecoder>(encoder, decoder);
  }
  fail("build_translation_model: unknown architecture \"{}\" (known: \"{}\", \"{}\")", c.architecture, kSeq2Seq,
       kTransformer);
}

void save_translation_model(const std::filesystem::path& file, const nn::EncoderDecoder& model,
                            const TranslationModelConfig& c, const data::Vocab& src_vocab,
                            const data::Vocab& tgt_vocab) {
  io::Metadata metadata = {{"architecture", c.architecture},           {"trained_by", c.trained_by},
                           {"num_steps", std::to_string(c.num_steps)}, {"num_hiddens", std::to_string(c.num_hiddens)},
                           {"dropout", fmt::format("{}", c.dropout)},  // the shortest text that reads back exactly
                           {"src_vocab", vocab_json(src_vocab)},       {"tgt_vocab", vocab_json(tgt_vocab)}};
  if (c.architecture == kSeq2Seq) {
    metadata["embed_size"] = std::to_string(c.embed_size);
    metadata["num_layers"] = std::to_string(c.num_layers);
  } else if (c.architecture == kTransformer) {
    metadata["ffn_num_hiddens"] = std::to_string(c.ffn_num_hiddens);
    metadata["num_heads"] = std::to_string(c.num_heads);
    metadata["num_blks"] = std::to_string(c.num_blks);
    metadata["use_bias"] = c.use_bias ? "true" : "false";
  } else {
    fail("save_translation_model: '{}': unknown architecture \"{}\" (known: \"{}\", \"{}\")", file.string(),
         c.architecture, kSeq2Seq, kTransformer);
  }
  io::save_safetensors(file, model.state_dict(), metadata);
}

TranslationModel load_translation_model(const std::filesystem::path& file) {
  const std::string where = fmt::format("load_translation_model: '{}'", file.string());
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) fail("{}: no such file", where);
  io::Metadata metadata;
  StateDict weights;
  try {
    weights = io::load_safetensors(file, &metadata);
  } catch (const Error& e) {
    fail("{}: not a readable safetensors file: {}", where, e.what());
  }
  const MetadataReader meta{metadata, where};

  TranslationModel m;
  TranslationModelConfig& c = m.config;
  c.architecture = meta.text("architecture");
  if (c.architecture != kSeq2Seq && c.architecture != kTransformer)
    fail("{}: metadata 'architecture' is \"{}\", a model this program does not know (known: \"{}\", \"{}\")", where,
         c.architecture, kSeq2Seq, kTransformer);
  c.trained_by = meta.text("trained_by");
  c.num_steps = meta.size("num_steps", kMaxNumSteps);
  c.num_hiddens = meta.size("num_hiddens", kMaxHiddens);
  c.dropout = meta.probability("dropout");
  if (c.architecture == kSeq2Seq) {
    c.embed_size = meta.size("embed_size", kMaxEmbed);
    c.num_layers = meta.size("num_layers", kMaxLayers);
  } else {
    c.ffn_num_hiddens = meta.size("ffn_num_hiddens", kMaxFfn);
    c.num_heads = meta.size("num_heads", kMaxHeads);
    c.num_blks = meta.size("num_blks", kMaxBlocks);
    c.use_bias = meta.flag("use_bias");
    if (c.num_hiddens % c.num_heads != 0)
      fail("{}: metadata num_hiddens {} is not a multiple of num_heads {}", where, c.num_hiddens, c.num_heads);
  }
  m.src_vocab = meta.vocab("src_vocab");
  m.tgt_vocab = meta.vocab("tgt_vocab");
  for (const char* token : {"<pad>", "<bos>", "<eos>"})
    if (!m.src_vocab.contains(token) || !m.tgt_vocab.contains(token))
      fail("{}: the vocabularies must both hold {}, which translating needs", where, token);

  Generator gen(0);  // every weight is replaced by the file's
  m.model = build_translation_model(c, m.src_vocab.size(), m.tgt_vocab.size(), gen);
  try {
    m.model->load_state_dict(weights);
  } catch (const Error& e) {
    fail("{}: its tensors do not fit the model its metadata describes ({}, source vocabulary {}, target {}): {}", where,
         m.describe(), m.src_vocab.size(), m.tgt_vocab.size(), e.what());
  }
  m.model->eval();
  return m;
}

void save_lesson_model(Lesson& lesson, const nn::EncoderDecoder& model, const TranslationModelConfig& config,
                       const data::NMTData& nmt) {
  const std::filesystem::path file = lesson.out() / "model.safetensors";
  save_translation_model(file, model, config, nmt.src_vocab, nmt.tgt_vocab);
  lesson.print(
      "The trained model and its vocabularies are saved in {}: translate your own sentences with\n"
      "  build/release/lessons/translate --model {} \"Your sentence.\"\n",
      file.string(), file.string());
  lesson.result("model_file", file.filename().string());
}

}  // namespace qkv::lesson

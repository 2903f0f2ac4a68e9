// A translation model saved and loaded (lessons/support/translation_model.hpp),
// and the `translate` program (lessons/translate.cpp) on small untrained
// models built here. Expected values: a saved model loads to the same
// numbers (equality: the file holds the float32 bits); each attention row is
// a softmax (sums to 1); a word missing from the vocabulary reads as <unk>
// (data::Vocab's rule); every bad input is refused with its name and a
// non-zero exit.
#include <doctest/doctest.h>

#include <fstream>

#include "run_lesson.hpp"
#include "translate_check.hpp"
#include "translation.hpp"
#include "translation_model.hpp"

using namespace qkv;
using qkv::lesson_test::read_text;
using qkv::lesson_test::run_program;
using qkv::lesson_test::TempDir;

namespace {

const std::vector<std::vector<std::string>> kEnglish = {{"i", "lost", "."}, {"he's", "calm", "."}, {"go", "."}};
const std::vector<std::vector<std::string>> kFrench = {
    {"j'ai", "perdu", "."}, {"il", "est", "calme", "."}, {"va", "!"}};

lesson::TranslationModelConfig seq2seq_config() {
  return {.architecture = "seq2seq_attention",
          .trained_by = "test",
          .num_steps = 6,
          .num_hiddens = 12,
          .embed_size = 8,
          .num_layers = 2};
}
lesson::TranslationModelConfig transformer_config() {
  return {.architecture = "transformer",
          .trained_by = "test",
          .num_steps = 6,
          .num_hiddens = 8,
          .ffn_num_hiddens = 16,
          .num_heads = 2,
          .num_blks = 2};
}

// An untrained model of `config` and tiny vocabularies, saved to `file`.
struct SavedModel {
  data::Vocab src{kEnglish, 0, {"<pad>", "<bos>", "<eos>"}}, tgt{kFrench, 0, {"<pad>", "<bos>", "<eos>"}};
  std::shared_ptr<nn::EncoderDecoder> model;
  SavedModel(const lesson::TranslationModelConfig& config, const std::filesystem::path& file) {
    Generator gen(7);
    model = lesson::build_translation_model(config, src.size(), tgt.size(), gen);
    lesson::save_translation_model(file, *model, config, src, tgt);
  }
};

// The metadata and tensors of `file`, written to `copy` with `edit` applied to the metadata.
template <class Edit>
void rewrite_metadata(const std::filesystem::path& file, const std::filesystem::path& copy, Edit edit) {
  io::Metadata metadata;
  StateDict tensors = io::load_safetensors(file, &metadata);
  edit(metadata);
  io::save_safetensors(copy, tensors, metadata);
}

// `translate --model <model> --out <dir>/out --color never <args>`.
lesson_test::Run translate(const TempDir& dir, const std::filesystem::path& model, const std::string& args) {
  return run_program(
      "translate",
      fmt::format("--model '{}' --out '{}' --color never {}", model.string(), (dir.path / "out").string(), args),
      dir.path);
}

}  // namespace

TEST_CASE("lesson support/translation model: a saved model loads to the same numbers") {
  for (const auto& config : {seq2seq_config(), transformer_config()}) {
    INFO(config.architecture);
    TempDir dir("translation_model");
    const std::filesystem::path file = dir.path / "model.safetensors";
    SavedModel saved(config, file);
    saved.model->eval();
    lesson::Translation a = lesson::translate(*saved.model, saved.src, saved.tgt, "He's calm.", config.num_steps);
    // The example of docs/course.md:
    lesson::TranslationModel loaded = lesson::load_translation_model(file);
    lesson::Translation b =
        lesson::translate(*loaded.model, loaded.src_vocab, loaded.tgt_vocab, "He's calm.", loaded.config.num_steps);

    CHECK(loaded.config.architecture == config.architecture);
    CHECK(loaded.config.num_steps == config.num_steps);
    CHECK(loaded.config.num_hiddens == config.num_hiddens);
    CHECK(loaded.src_vocab.idx_to_token() == saved.src.idx_to_token());
    CHECK(loaded.tgt_vocab.idx_to_token() == saved.tgt.idx_to_token());
    CHECK_FALSE(loaded.model->is_training());
    // Every weight, bit for bit.
    const StateDict before = saved.model->state_dict(), after = loaded.model->state_dict();
    REQUIRE(before.size() == after.size());
    for (const auto& entry : before) {
      const std::string& name = entry.first;  // not a structured binding: INFO captures it in a lambda (clang 14)
      const Tensor& t = entry.second;
      INFO(name);
      REQUIRE(after.count(name) == 1);
      CHECK(after.at(name).to_vector() == t.to_vector());
    }
    // The same forward, and the same translation with the same attention.
    IntTensor X = int_tensor({4, 5, 6, 3, 1, 1}, {1, 6}), X_len = int_tensor({4}, {1});
    IntTensor dec_X = int_tensor({2, 4, 5, 6}, {1, 4});
    CHECK(loaded.model->forward(X, dec_X, X_len).to_vector() == saved.model->forward(X, dec_X, X_len).to_vector());
    CHECK(b.tokens == a.tokens);
    CHECK(b.source == a.source);
    CHECK(b.attention.to_vector() == a.attention.to_vector());
  }
}

TEST_CASE("translate: a sentence of unknown words is read with <unk>, and each row of attention sums to 1") {
  TempDir dir("translate_unk");
  const std::filesystem::path model = dir.path / "model.safetensors";
  SavedModel saved(transformer_config(), model);
  lesson_test::Run r = translate(dir, model, "'I lost the zebra.' 'Go!'");
  INFO(r.output);
  REQUIRE(r.status == 0);
  std::ifstream in(dir.path / "out" / "results.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  CHECK(doc.at("architecture") == "transformer");
  REQUIRE(doc.at("translations").size() == 2);
  const nlohmann::json& t = doc.at("translations")[0];
  CHECK(t.at("input") == "I lost the zebra.");
  // "the" and "zebra" are not in the vocabulary of kEnglish.
  CHECK(t.at("source_tokens").get<std::vector<std::string>>() ==
        std::vector<std::string>{"i", "lost", "<unk>", "<unk>", ".", "<eos>"});
  for (const nlohmann::json& each : doc.at("translations")) {
    const std::vector<int64_t> shape = each.at("attention").at("shape").get<std::vector<int64_t>>();
    REQUIRE(shape.size() == 2);
    CHECK(shape[1] == static_cast<int64_t>(each.at("source_tokens").size()));
    // One row per output token, and one for <eos> unless the output ran to num_steps (6) tokens.
    const auto tokens = static_cast<int64_t>(each.at("tokens").size());
    CHECK(shape[0] == (tokens < 6 ? tokens + 1 : tokens));
    lesson_test::check_rows_sum_to_one(each.at("attention").at("values").get<std::vector<float>>(), shape);
    CHECK(read_text(dir.path / "out" / each.at("picture").get<std::string>()).find("<svg") != std::string::npos);
  }
  // The picture's title names the model and the sentence.
  const std::string svg = read_text(dir.path / "out" / "attention_0.svg");
  CHECK(svg.find("I lost the zebra.") != std::string::npos);
  CHECK(svg.find("test, the last block") != std::string::npos);
  const std::string transcript = read_text(dir.path / "out" / "transcript.txt");
  CHECK(transcript.find("i lost <unk> <unk> . <eos>") != std::string::npos);
}

TEST_CASE("translate: bad input is refused, named, with a non-zero exit") {
  TempDir dir("translate_errors");
  const std::filesystem::path model = dir.path / "model.safetensors";
  SavedModel saved(seq2seq_config(), model);
  auto refused = [&](const std::filesystem::path& file, const std::string& args,
                     const std::vector<std::string>& named) {
    lesson_test::Run r = translate(dir, file, args);
    INFO(r.output);
    CHECK(r.status != 0);
    for (const std::string& text : named) {
      INFO(text);
      CHECK(r.output.find(text) != std::string::npos);
    }
  };

  SUBCASE("a missing file") {
    refused(dir.path / "nowhere.safetensors", "'Go.'", {"--model", "nowhere.safetensors", "no such file"});
  }
  SUBCASE("a truncated file") {
    const std::string bytes = read_text(model);
    const std::filesystem::path cut = dir.path / "cut.safetensors";
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    refused(cut, "'Go.'", {"cut.safetensors", "not a readable safetensors file"});
  }
  SUBCASE("a file that is not a safetensors file") {
    const std::filesystem::path text = dir.path / "notes.txt";
    std::ofstream(text) << "these are not weights\n";
    refused(text, "'Go.'", {"notes.txt", "not a readable safetensors file"});
  }
  SUBCASE("a safetensors file without the metadata") {
    const std::filesystem::path bare = dir.path / "bare.safetensors";
    io::save_safetensors(bare, saved.model->state_dict());
    refused(bare, "'Go.'", {"bare.safetensors", "no key 'architecture'"});
  }
  SUBCASE("a metadata key missing") {
    const std::filesystem::path file = dir.path / "no_vocab.safetensors";
    rewrite_metadata(model, file, [](io::Metadata& m) { m.erase("tgt_vocab"); });
    refused(file, "'Go.'", {"no_vocab.safetensors", "no key 'tgt_vocab'"});
  }
  SUBCASE("a malformed metadata value") {
    const std::filesystem::path file = dir.path / "bad_size.safetensors";
    rewrite_metadata(model, file, [](io::Metadata& m) { m["num_layers"] = "two"; });
    refused(file, "'Go.'", {"bad_size.safetensors", "'num_layers'", "\"two\""});
  }
  SUBCASE("a size past the bound of the lesson flag that sets it") {
    // 100000 GRU layers would be built (and allocated) before the weights are checked against the file.
    const std::filesystem::path file = dir.path / "deep.safetensors";
    rewrite_metadata(model, file, [](io::Metadata& m) { m["num_layers"] = "100000"; });
    refused(file, "'Go.'",
            {"deep.safetensors", "metadata 'num_layers' is \"100000\", not a whole number from 1 to 16"});
    rewrite_metadata(model, file, [](io::Metadata& m) { m["num_hiddens"] = "1025"; });
    refused(file, "'Go.'",
            {"deep.safetensors", "metadata 'num_hiddens' is \"1025\", not a whole number from 1 to 1024"});
  }
  SUBCASE("a model of an unknown kind") {
    const std::filesystem::path file = dir.path / "lstm.safetensors";
    rewrite_metadata(model, file, [](io::Metadata& m) { m["architecture"] = "lstm"; });
    refused(file, "'Go.'", {"lstm.safetensors", "\"lstm\"", "does not know"});
  }
  SUBCASE("tensors that do not fit the architecture") {
    const std::filesystem::path file = dir.path / "wider.safetensors";
    rewrite_metadata(model, file, [](io::Metadata& m) { m["num_hiddens"] = "24"; });  // the file's GRU has 12
    refused(file, "'Go.'", {"wider.safetensors", "do not fit"});
  }
  SUBCASE("no sentence") { refused(model, "", {"no sentence", "usage: translate"}); }
  SUBCASE("a sentence with no words") { refused(model, "'Go.' ' '", {"sentence 1", "no words"}); }
  SUBCASE("a bad flag value") { refused(model, "--color sometimes 'Go.'", {"--color", "sometimes"}); }
}

namespace {

// `translate <args>` started from the folder `cwd`, its output captured there.
lesson_test::Run translate_from(const std::filesystem::path& cwd, const std::string& args) {
  const std::filesystem::path log = cwd / "translate.log";
  const std::string command =
      fmt::format("cd '{}' && '{}/translate' {} > '{}' 2>&1", cwd.string(), QKV_LESSONS_DIR, args, log.string());
  const int raw = std::system(command.c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : 128, read_text(log)};
}

}  // namespace

TEST_CASE("translate: without --model it finds lesson 08's model from the folder it runs in, or names each path") {
  // The rule (lessons/translate.cpp): ./out/lessons/08_seq2seq_attention/model.safetensors, then
  // ./out/lessons/11_transformer/…, then the same two under the repository it was built from.
  SUBCASE("a model saved where lesson 08 saves it, in the current folder") {
    TempDir dir("translate_find");
    const std::filesystem::path model = dir.path / "out" / "lessons" / "08_seq2seq_attention" / "model.safetensors";
    std::filesystem::create_directories(model.parent_path());
    SavedModel saved(seq2seq_config(), model);
    lesson_test::Run r = translate_from(dir.path, "--color never 'Go.'");
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(r.output.find(fmt::format("from {}", std::filesystem::canonical(model).string())) != std::string::npos);
  }
  SUBCASE("lesson 11's model when lesson 08's is not there") {
    TempDir dir("translate_find11");
    const std::filesystem::path model = dir.path / "out" / "lessons" / "11_transformer" / "model.safetensors";
    std::filesystem::create_directories(model.parent_path());
    SavedModel saved(transformer_config(), model);
    lesson_test::Run r = translate_from(dir.path, "--color never 'Go.'");
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(r.output.find(fmt::format("from {}", std::filesystem::canonical(model).string())) != std::string::npos);
  }
  SUBCASE("a folder with no model: the repository's model, or every path it tried") {
    TempDir dir("translate_nomodel");
    const std::filesystem::path repo = QKV_SOURCE_DIR;
    const std::filesystem::path repo_model = repo / "out" / "lessons" / "08_seq2seq_attention" / "model.safetensors";
    const std::filesystem::path repo_model_11 = repo / "out" / "lessons" / "11_transformer" / "model.safetensors";
    lesson_test::Run r = translate_from(dir.path, "--color never 'Go.'");
    INFO(r.output);
    if (std::filesystem::exists(repo_model) || std::filesystem::exists(repo_model_11)) {
      CHECK(r.status == 0);
      CHECK(r.output.find(fmt::format("from {}", repo.string())) != std::string::npos);
    } else {
      CHECK(r.status != 0);
      CHECK(r.output.find("no model found") != std::string::npos);
      const std::filesystem::path here = std::filesystem::canonical(dir.path);
      for (const std::filesystem::path& p :
           {here / "out" / "lessons" / "08_seq2seq_attention" / "model.safetensors",
            here / "out" / "lessons" / "11_transformer" / "model.safetensors", repo_model, repo_model_11}) {
        INFO(p.string());
        CHECK(r.output.find(p.string()) != std::string::npos);
      }
    }
  }
}

TEST_CASE("translate: each unknown word is named, a sentence past num_steps is cut with a warning") {
  TempDir dir("translate_warn");
  const std::filesystem::path model = dir.path / "model.safetensors";
  SavedModel saved(seq2seq_config(), model);  // num_steps 6
  // "the" and "zebra" are not among kEnglish's words; the second sentence is 7 words and <eos>: 8 tokens > 6.
  lesson_test::Run r = translate(dir, model, "'I lost the zebra, the zebra.' 'I lost. Go. I lost.'");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("\"the\" is not in the model's vocabulary: it reads as <unk>") != std::string::npos);
  CHECK(r.output.find("\"zebra\" is not in the model's vocabulary: it reads as <unk>") != std::string::npos);
  CHECK(r.output.find("\",\" is not in the model's vocabulary") != std::string::npos);
  CHECK(r.output.find("reads at most 6 tokens (<eos> included): cut after \"i lost . go . i\", dropping \"lost . "
                      "<eos>\"") != std::string::npos);
  std::ifstream in(dir.path / "out" / "results.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  const nlohmann::json& t = doc.at("translations");
  // Each unknown word once, in the order it came.
  CHECK(t[0].at("unknown_words").get<std::vector<std::string>>() == std::vector<std::string>{"the", "zebra", ","});
  CHECK(t[0].at("cut_tokens").get<std::vector<std::string>>() ==
        std::vector<std::string>{"zebra", ".", "<eos>"});  // "i lost the zebra , the" is 6 tokens
  CHECK(t[1].at("unknown_words").empty());
  CHECK(t[1].at("cut_tokens").get<std::vector<std::string>>() == std::vector<std::string>{"lost", ".", "<eos>"});
  CHECK(doc.at("src_vocab_size") == saved.src.size());
  CHECK(doc.at("tgt_vocab_size") == saved.tgt.size());
}

TEST_CASE("translate: --help says how many words the model knows") {
  TempDir dir("translate_help");
  const std::filesystem::path model = dir.path / "out" / "lessons" / "08_seq2seq_attention" / "model.safetensors";
  std::filesystem::create_directories(model.parent_path());
  SavedModel saved(seq2seq_config(), model);
  lesson_test::Run r = translate_from(dir.path, "--help");
  INFO(r.output);
  CHECK(r.status == 0);
  // kEnglish's 6 words and the 4 reserved tokens; kFrench's 8 and the 4.
  CHECK(saved.src.size() == 10);
  CHECK(r.output.find(fmt::format("knows 10 English tokens and {} French", saved.tgt.size())) != std::string::npos);
  CHECK(r.output.find("out/lessons/08_seq2seq_attention/model.safetensors") != std::string::npos);
}

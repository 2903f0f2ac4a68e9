// translate · your own sentences through a model lesson 08 or 11 trained
//
// Lessons 08 (the GRU with Bahdanau attention) and 11 (the Transformer) save
// their trained model, with its vocabularies, as <out>/model.safetensors.
// This program loads one and translates the sentences it is given: for each
// it prints the source as the model reads it (preprocessed as the training
// data was; a word the model never saw is <unk>), the translation, and the
// decoder's attention over the source, in the terminal and as
// <out>/attention_<k>.svg. <out>/results.json keeps it all.
// Decoding is greedy, as in the lessons (EncoderDecoder::predict); beam
// search is left out.
//
// Run: build/release/lessons/08_seq2seq_attention      (trains and saves the model, seconds)
//      build/release/lessons/translate "I lost." "The black dog swims."
//      build/release/lessons/translate --model out/lessons/11_transformer/model.safetensors "Go home."
#include <qkv/qkv.hpp>
#include <qkv/viz.hpp>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lesson.hpp"
#include "translation.hpp"
#include "translation_model.hpp"
#include "translation_report.hpp"

using namespace qkv;

namespace {

// What a row of the heatmap is, for the picture's title.
std::string attention_kind(const lesson::TranslationModel& m) {
  return m.config.architecture == "transformer" ? "the last block's cross-attention, mean of its heads"
                                                : "the decoder's Bahdanau attention";
}

// The same rule as translate's: words are what preprocessing leaves between spaces.
bool has_words(const std::string& sentence) {
  return data::preprocess_nmt(sentence).find_first_not_of(' ') != std::string::npos;
}

int run(const std::filesystem::path& model_file, const std::filesystem::path& out, const std::string& color,
        const std::vector<std::string>& sentences) {
  for (size_t k = 0; k < sentences.size(); ++k)
    if (!has_words(sentences[k]))
      fail("sentence {} (\"{}\") has no words once preprocessed (lowercased, a space before , . ! ?)", k, sentences[k]);
  if (!std::filesystem::exists(model_file))
    fail(
        "--model {}: no such file (lesson 08 saves out/lessons/08_seq2seq_attention/model.safetensors once it has "
        "trained: run build/release/lessons/08_seq2seq_attention first; lesson 11 saves "
        "out/lessons/11_transformer/model.safetensors)",
        model_file.string());
  lesson::TranslationModel m = lesson::load_translation_model(model_file);

  std::filesystem::create_directories(out);
  lesson::Transcript print(stdout, isatty(fileno(stdout)) != 0);
  print.open(out / "transcript.txt");
  viz::TextOptions text;
  text.color = color == "always" ? viz::Color::Always : color == "never" ? viz::Color::Never : viz::Color::Auto;
  print.write(fmt::format("Model: {}\n  from {}; it reads at most {} source tokens\n", m.describe(),
                          model_file.string(), m.config.num_steps));

  nlohmann::json translations = nlohmann::json::array();
  for (size_t k = 0; k < sentences.size(); ++k) {
    lesson::Translation t = lesson::translate(*m.model, m.src_vocab, m.tgt_vocab, sentences[k], m.config.num_steps);
    const std::string picture = fmt::format("attention_{}.svg", k);
    viz::HeatmapOptions opt = lesson::attention_heatmap_options(
        t, fmt::format("{}, {}: \"{}\" => \"{}\"", m.config.trained_by, attention_kind(m), sentences[k], t.text()));
    print.write(fmt::format("\n[{}] {}\n  the model reads: {}\n  translation:     {}\n", k, sentences[k],
                            fmt::join(t.source, " "), t.text()));
    print.write(fmt::format("{}\n", viz::heatmap_text(t.attention, opt, text)));  // (output steps, source steps)
    viz::save_heatmap_svg(out / picture, t.attention, opt);
    print.write(fmt::format("  attention: {}\n", (out / picture).string()));
    translations.push_back({{"input", sentences[k]},
                            {"source_tokens", t.source},
                            {"translation", t.text()},
                            {"tokens", t.tokens},
                            {"attention", {{"shape", t.attention.shape().dims()}, {"values", t.attention.to_vector()}}},
                            {"picture", picture}});
  }

  const nlohmann::json doc = {{"program", "translate"},
                              {"model", model_file.string()},
                              {"architecture", m.config.architecture},
                              {"trained_by", m.config.trained_by},
                              {"num_steps", m.config.num_steps},
                              {"translations", translations}};
  // Written whole beside it, then renamed into place: never a half results.json.
  const std::filesystem::path results = out / "results.json", partial = out / "results.json.partial";
  {
    std::ofstream file(partial);
    file << doc.dump(2) << "\n";
    if (!file) fail("translate: cannot write {}", partial.string());
  }
  std::filesystem::rename(partial, results);
  print.write(fmt::format("\nResults: {}\n", results.string()));
  return 0;
}

// The flags, checked before anything runs, then run().
int translate_main(int argc, char** argv) {
  std::filesystem::path model_file = std::filesystem::path("out") / "lessons" / "08_seq2seq_attention" /
                                     "model.safetensors";  // where lesson 08 saves it by default
  std::filesystem::path out = std::filesystem::path("out") / "lessons" / "translate";
  std::string color = "auto";
  std::vector<std::string> sentences;
  CLI::App app("Translate English sentences with the model lesson 08 or 11 trained and saved", "translate");
  auto not_empty = [](const std::string& s) { return s.empty() ? std::string("an empty path") : std::string(); };
  app.add_option("--model", model_file, "the model file (lesson 08 or 11 writes <its out>/model.safetensors)")
      ->check(not_empty)
      ->capture_default_str();
  app.add_option("--out", out, "folder for the pictures, transcript.txt and results.json")
      ->check(not_empty)
      ->capture_default_str();
  app.add_option("--color", color, "colour in the terminal pictures")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app.add_option("sentences", sentences, "the English sentences to translate");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);  // --help prints and exits 0; a bad flag says why and exits non-zero
  }
  if (sentences.empty()) {
    fmt::print(stderr,
               "error: no sentence to translate\n"
               "usage: translate [--model FILE] [--out DIR] [--color auto|always|never] SENTENCE...\n");
    return 2;
  }
  return run(model_file, out, color, sentences);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return translate_main(argc, argv);
  } catch (const std::exception& e) {  // a qkv::Error names what was wrong
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
  } catch (...) {
    std::fputs("error: an unknown exception\n", stderr);
  }
  return 1;
}

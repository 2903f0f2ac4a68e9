// translate · your own sentences through a model lesson 08 or 11 trained
//
// Lessons 08 (the GRU with Bahdanau attention) and 11 (the Transformer) save
// their trained model, with its vocabularies, as <out>/model.safetensors.
// This program loads one and translates the sentences it is given: for each
// it prints the source as the model reads it (preprocessed as the training
// data was; a word the model never saw is <unk>), the translation, and the
// decoder's attention over the source, in the terminal and as
// <out>/attention_<k>.svg. <out>/results.json keeps it all.
// Decoding is greedy, as in the lessons (EncoderDecoder::predict).
//
// The model is found from any folder: without --model, translate looks for
// lesson 08's model, then lesson 11's, under out/lessons/ in the current
// folder and then in the repository it was built from (the build passes its
// path); if none is there it names every path it tried. A word the model
// never saw is named as it turns into <unk>, and a sentence longer than the
// model reads (num_steps tokens, <eos> included) is cut with a warning that
// says what was dropped.
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

#ifndef QKV_SOURCE_DIR
#error "the build passes QKV_SOURCE_DIR, the repository translate is built from"
#endif
#ifndef QKV_DATA_DIR
#error "the build passes QKV_DATA_DIR, the repository's data/ folder"
#endif

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

// Where lessons 08 and 11 save their model when run at their defaults from `root`.
std::vector<std::filesystem::path> default_models(const std::filesystem::path& root) {
  return {root / "out" / "lessons" / "08_seq2seq_attention" / "model.safetensors",
          root / "out" / "lessons" / "11_transformer" / "model.safetensors"};
}

// Every place translate looks for a model when --model is not given, in order:
// the current folder (a lesson run from there saved it there), then the
// repository translate was built from (./qkv.sh lessons runs the lessons there).
std::vector<std::filesystem::path> model_candidates() {
  std::vector<std::filesystem::path> paths = default_models(std::filesystem::current_path());
  for (const std::filesystem::path& p : default_models(QKV_SOURCE_DIR))
    if (std::find(paths.begin(), paths.end(), p) == paths.end()) paths.push_back(p);
  return paths;
}

// The first candidate that exists, or an error that lists each path tried.
std::filesystem::path find_model() {
  const std::vector<std::filesystem::path> paths = model_candidates();
  for (const std::filesystem::path& p : paths)
    if (std::filesystem::exists(p)) return p;
  std::string tried;
  for (const std::filesystem::path& p : paths) tried += fmt::format("\n  {}", p.string());
  fail(
      "no model found: without --model, translate looks for lesson 08's model, then lesson 11's, in this "
      "order:{}\nTrain one (build/release/lessons/08_seq2seq_attention saves "
      "out/lessons/08_seq2seq_attention/model.safetensors in the folder it runs from), or pass --model FILE.",
      tried);
}

// --help's last lines: how many words the models know, from the first model
// found, else from the training data the lessons build their vocabularies from.
std::string vocabulary_footer() {
  for (const std::filesystem::path& p : model_candidates()) {
    if (!std::filesystem::exists(p)) continue;
    try {
      const lesson::TranslationModel m = lesson::load_translation_model(p);
      return fmt::format(
          "Vocabulary: the model at {} knows {} English tokens and {} French ones (<unk>, <pad>, <bos>, <eos> "
          "among them); every other word reads as <unk>.\n",
          p.string(), m.src_vocab.size(), m.tgt_vocab.size());
    } catch (const std::exception&) {  // a damaged file: the run itself will say what is wrong with it
    }
  }
  try {
    // Lesson 08 keeps the words seen at least twice (d2l's min_freq 2), lesson 11 every word (min_freq 1).
    const std::string file = (std::filesystem::path(QKV_DATA_DIR) / "eng-fra" / "train.txt").string();
    const data::NMTData twice = data::load_data_nmt(file, 10, 2), once = data::load_data_nmt(file, 10, 1);
    return fmt::format(
        "Vocabulary (no model found yet): from {}, lesson 08 keeps the words seen at least twice, {} English "
        "tokens and {} French ones, lesson 11 every word, {} and {} (<unk>, <pad>, <bos>, <eos> among them); "
        "every other word reads as <unk>.\n",
        file, twice.src_vocab.size(), twice.tgt_vocab.size(), once.src_vocab.size(), once.tgt_vocab.size());
  } catch (const std::exception& e) {
    return fmt::format("Vocabulary: unknown here ({})", e.what());
  }
}

// What a learner should know before trusting the translation of sentence k.
void warn_about_input(lesson::Transcript& print, const lesson::Translation& t, int64_t num_steps) {
  for (const std::string& word : t.unknown_words)
    print.write(fmt::format("  warning: \"{}\" is not in the model's vocabulary: it reads as <unk>\n", word));
  if (!t.cut_tokens.empty())
    print.write(fmt::format(
        "  warning: the model reads at most {} tokens (<eos> included): cut after \"{}\", dropping \"{}\"\n", num_steps,
        fmt::join(t.source, " "), fmt::join(t.cut_tokens, " ")));
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
  print.write(
      fmt::format("Model: {}\n  from {}; it reads at most {} source tokens; it knows {} English tokens and {} French\n",
                  m.describe(), model_file.string(), m.config.num_steps, m.src_vocab.size(), m.tgt_vocab.size()));

  nlohmann::json translations = nlohmann::json::array();
  for (size_t k = 0; k < sentences.size(); ++k) {
    lesson::Translation t = lesson::translate(*m.model, m.src_vocab, m.tgt_vocab, sentences[k], m.config.num_steps);
    const std::string picture = fmt::format("attention_{}.svg", k);
    viz::HeatmapOptions opt = lesson::attention_heatmap_options(
        t, fmt::format("{}, {}: \"{}\" => \"{}\"", m.config.trained_by, attention_kind(m), sentences[k], t.text()));
    print.write(fmt::format("\n[{}] {}\n  the model reads: {}\n", k, sentences[k], fmt::join(t.source, " ")));
    warn_about_input(print, t, m.config.num_steps);
    print.write(fmt::format("  translation:     {}\n", t.text()));
    print.write(fmt::format("{}\n", viz::heatmap_text(t.attention, opt, text)));  // (output steps, source steps)
    viz::save_heatmap_svg(out / picture, t.attention, opt);
    print.write(fmt::format("  attention: {}\n", (out / picture).string()));
    translations.push_back({{"input", sentences[k]},
                            {"source_tokens", t.source},
                            {"unknown_words", t.unknown_words},
                            {"cut_tokens", t.cut_tokens},
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
                              {"src_vocab_size", m.src_vocab.size()},
                              {"tgt_vocab_size", m.tgt_vocab.size()},
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
  std::filesystem::path model_file;  // empty: find_model() looks for it
  std::filesystem::path out = std::filesystem::path("out") / "lessons" / "translate";
  std::string color = "auto";
  std::vector<std::string> sentences;
  CLI::App app("Translate English sentences with the model lesson 08 or 11 trained and saved", "translate");
  auto not_empty = [](const std::string& s) { return s.empty() ? std::string("an empty path") : std::string(); };
  std::string looked;
  for (const std::filesystem::path& p : model_candidates()) looked += fmt::format("\n    {}", p.string());
  app.add_option(
         "--model", model_file,
         "the model file (lesson 08 or 11 writes <its out>/model.safetensors); without it, the first of:" + looked)
      ->check(not_empty);
  app.footer(vocabulary_footer());
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
  return run(model_file.empty() ? find_model() : model_file, out, color, sentences);
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

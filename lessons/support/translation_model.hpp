// A trained translation model in one file, so that it can be used again
// without its data: lessons 08 and 11 save theirs as <out>/model.safetensors,
// and `translate` (lessons/translate.cpp) loads one and translates any
// sentence with it.
//
//   lesson::save_translation_model(lesson.out() / "model.safetensors", model, config, nmt.src_vocab, nmt.tgt_vocab);
//   lesson::TranslationModel m = lesson::load_translation_model("out/lessons/08_seq2seq_attention/model.safetensors");
//   lesson::Translation t = lesson::translate(*m.model, m.src_vocab, m.tgt_vocab, "I lost.", m.config.num_steps);
//
// The file is a safetensors file (io/safetensors.hpp): the model's
// state_dict(), and in its "__metadata__" (strings only) everything else
// needed to build the model again:
//   architecture        "seq2seq_attention" (lesson 08: GRU encoder, Bahdanau decoder)
//                       or "transformer" (lesson 11)
//   trained_by          the program that trained it: "08_seq2seq_attention"
//   num_steps           the source length the model reads (longer sentences are cut)
//   seq2seq_attention:  embed_size, num_hiddens, num_layers, dropout
//   transformer:        num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout, use_bias
//   src_vocab, tgt_vocab  the vocabularies' tokens in id order, as a JSON array of strings
//                       (["<unk>", "<pad>", "<bos>", "<eos>", ".", "i", …])
//
// Loading checks everything before it builds anything: a missing file, a
// file that is not a safetensors file, a missing or malformed metadata key
// (named, with the path), an unknown architecture and weights that do not
// fit the architecture are each a qkv::Error that says which.
// Left out on purpose: the optimizer's state (this is for translating, not
// for training on: io::save_checkpoint keeps that).
#pragma once
#include <qkv/qkv.hpp>

#include <filesystem>
#include <memory>
#include <string>

#include "lesson.hpp"

namespace qkv::lesson {

// What a model is built from, besides its two vocabulary sizes.
struct TranslationModelConfig {
  std::string architecture;  // "seq2seq_attention" or "transformer"
  std::string trained_by;    // the program that trained it
  int64_t num_steps = 10;
  int64_t num_hiddens = 0;  // both: the GRU's hidden size, or d_model
  float dropout = 0;
  // seq2seq_attention: nn::Seq2SeqEncoder and nn::Seq2SeqAttentionDecoder
  int64_t embed_size = 0, num_layers = 0;
  // transformer: nn::TransformerEncoder and nn::TransformerDecoder
  int64_t ffn_num_hiddens = 0, num_heads = 0, num_blks = 0;
  bool use_bias = false;  // the encoder's attention projections
};

// A loaded model, ready to translate (in eval mode), with its vocabularies.
struct TranslationModel {
  TranslationModelConfig config;
  std::shared_ptr<nn::EncoderDecoder> model;
  data::Vocab src_vocab, tgt_vocab;
  std::string describe() const;  // "lesson 08's GRU + Bahdanau attention (E 48, H 96, 1 layer)"
};

// An untrained model of that architecture and size (the weights drawn from
// `gen`); a config of an unknown architecture or with a size below 1 is a
// qkv::Error.
std::shared_ptr<nn::EncoderDecoder> build_translation_model(const TranslationModelConfig& config,
                                                            int64_t src_vocab_size, int64_t tgt_vocab_size,
                                                            Generator& gen);

// Write `model`'s weights, `config` and the vocabularies to `file` (atomically, as save_safetensors).
void save_translation_model(const std::filesystem::path& file, const nn::EncoderDecoder& model,
                            const TranslationModelConfig& config, const data::Vocab& src_vocab,
                            const data::Vocab& tgt_vocab);

// Read what save_translation_model wrote: the model built from the metadata,
// its weights loaded (strictly: every tensor present, none extra, each of its
// shape), in eval mode.
TranslationModel load_translation_model(const std::filesystem::path& file);

// What lessons 08 and 11 do after training: save to <out>/model.safetensors,
// say where in one line, and record "model_file": "model.safetensors" in results.json.
void save_lesson_model(Lesson& lesson, const nn::EncoderDecoder& model, const TranslationModelConfig& config,
                       const data::NMTData& nmt);

}  // namespace qkv::lesson

// Beam search (d2l 10.8) for any nn::EncoderDecoder: instead of the single
// most likely next token (greedy decoding, EncoderDecoder::predict), keep
// the k most likely partial translations at every step.
//
//   lesson::BeamSearch r = lesson::beam_search(model, src_ids, {.beam_size = 2, .num_steps = 10, .pad = pad,
//                                                               .bos = bos, .eos = eos, .max_len = 10});
//   r.tokens       the best finished sequence, without <eos>
//   r.steps[t]     what the beam held after step t (for printing it step by step)
//
// The rule, d2l 10.8.3's:
//   start: one hypothesis, the empty sequence, log-probability 0
//   each step: every live hypothesis y_1…y_t is extended by every token v,
//              log P(y_1…y_t v | x) = log P(y_1…y_t | x) + log_softmax(decoder(y_t))[v],
//              and the k extensions of largest log-probability among all k·V are kept
//              (ties: the earlier hypothesis, then the smaller token id);
//              an extension ending in <eos> is finished and leaves the beam
//   stop:     when no hypothesis is live, or after max_len steps
//   answer:   of the finished sequences and those still live at the end, the one
//              of largest score = log P(y | x) / L^α, with L the sequence's length
//              counting its <eos> (α = 0.75 in d2l; α = 0 is the plain probability).
// With k = 1 this is greedy decoding: the one extension kept is the argmax.
//
// Left out on purpose: batching the hypotheses into one decoder call (each
// runs on its own, B = 1: slower, and the same numbers), and the tricks of
// production decoders (early stopping once no live hypothesis can win).
//
// Letters: T = num_steps source steps, V the target vocabulary, k the beam size.
#pragma once
#include <qkv/qkv.hpp>

#include <string>
#include <vector>

namespace qkv::lesson {

struct BeamOptions {
  int64_t beam_size = 2;   // k
  int64_t num_steps = 10;  // the source is cut or padded to T = num_steps, as in EncoderDecoder::predict
  int64_t pad = 0, bos = 0, eos = 0;
  int64_t max_len = 10;  // at most this many decoding steps
  double alpha = 0.75;   // the length penalty's exponent α
};

// One sequence in the beam.
struct Hypothesis {
  std::vector<int64_t> tokens;       // the output so far, its <eos> included when finished
  double log_prob = 0;               // log P(tokens | x), natural log
  bool finished = false;             // ended in <eos>
  double score(double alpha) const;  // log_prob / L^α, L = tokens.size()
};

struct BeamSearch {
  std::vector<int64_t> tokens;  // the best sequence, without <eos>
  Hypothesis best;              // the same, with its log-probability (and <eos> if it said it)
  double score = 0;             // best.score(alpha)
  // steps[t]: every hypothesis that came out of step t (the live ones kept
  // and the ones that finished there), in the order of their log-probability.
  std::vector<std::vector<Hypothesis>> steps;
};

// Beam search of one source sentence, its ids ending in <eos>, unpadded (as
// EncoderDecoder::predict takes it). Runs in eval mode without a graph and
// restores the mode it found. A beam_size or max_len below 1, a num_steps
// below 1, an empty source or a negative id is a qkv::Error naming it.
BeamSearch beam_search(nn::EncoderDecoder& model, const std::vector<int64_t>& src, const BeamOptions& options);

}  // namespace qkv::lesson

// Beam search (d2l 10.8) over any nn::EncoderDecoder: see beam_search.hpp.
//
// Letters: T source steps, V target vocabulary.
#include "beam_search.hpp"

#include <algorithm>
#include <cmath>

namespace qkv::lesson {

double Hypothesis::score(double alpha) const {
  const auto L = static_cast<double>(std::max<size_t>(tokens.size(), 1));
  return log_prob / std::pow(L, alpha);
}

namespace {

// A live hypothesis and the decoder state that has read it.
struct Live {
  Hypothesis h;
  nn::DecoderState state;
};

// One way to extend live hypothesis `from` by `token`.
struct Extension {
  size_t from;
  int64_t token;
  double log_prob;
};

// Puts a module back into the mode it was in when the scope ends.
struct RestoreMode {
  nn::Module& module;
  bool was_training;
  ~RestoreMode() { module.train(was_training); }
};

}  // namespace

BeamSearch beam_search(nn::EncoderDecoder& model, const std::vector<int64_t>& src, const BeamOptions& options) {
  const BeamOptions& o = options;
  if (o.beam_size < 1 || o.max_len < 1 || o.num_steps < 1)
    fail("beam_search: beam_size {}, max_len {} and num_steps {} must be at least 1", o.beam_size, o.max_len,
         o.num_steps);
  if (src.empty()) fail("beam_search: the source is empty (it should end with eos at least)");
  for (size_t i = 0; i < src.size(); ++i)
    if (src[i] < 0) fail("beam_search: src[{}] = {} is not a token id", i, src[i]);
  if (o.pad < 0 || o.bos < 0 || o.eos < 0)
    fail("beam_search: pad {}, bos {} and eos {} must be token ids", o.pad, o.bos, o.eos);
  if (!std::isfinite(o.alpha)) fail("beam_search: alpha {} is not a finite number", o.alpha);

  RestoreMode restore{model, model.is_training()};
  model.eval();
  NoGradGuard no_grad;

  // The source as EncoderDecoder::predict reads it: cut or padded to T.
  const int64_t T = o.num_steps, len = std::min<int64_t>(static_cast<int64_t>(src.size()), T);
  std::vector<int64_t> padded(src.begin(), src.begin() + len);
  padded.resize(static_cast<size_t>(T), o.pad);
  IntTensor enc_X = int_tensor(padded, {1, T});      // (1, T)
  IntTensor enc_valid_len = int_tensor({len}, {1});  // (1)
  nn::DecoderState start = model.decoder->init_state(model.encoder->forward(enc_X, enc_valid_len), enc_valid_len);

  BeamSearch result;
  std::vector<Live> live = {{Hypothesis{}, start}};
  std::vector<Hypothesis> finished;
  for (int64_t step = 0; step < o.max_len && !live.empty(); ++step) {
    // Every extension of every live hypothesis, scored by its log-probability.
    std::vector<Extension> all;
    std::vector<nn::DecoderState> next_states;  // live[i]'s state once it has read its last token
    for (size_t i = 0; i < live.size(); ++i) {
      const int64_t last = live[i].h.tokens.empty() ? o.bos : live[i].h.tokens.back();
      nn::DecoderState state = live[i].state;  // a copy: the decoder replaces its tensors, never writes into them
      Tensor logits = model.decoder->forward(int_tensor({last}, {1, 1}), state);       // (1, 1) -> (1, 1, V)
      const std::vector<float> lp = log_softmax(logits.reshape({-1}), 0).to_vector();  // (V)
      for (size_t v = 0; v < lp.size(); ++v)
        all.push_back({i, static_cast<int64_t>(v), live[i].h.log_prob + static_cast<double>(lp[v])});
      next_states.push_back(std::move(state));
    }
    // The k largest; ties go to the earlier hypothesis, then the smaller id (a stable sort keeps that order).
    const auto k = static_cast<size_t>(std::min<int64_t>(o.beam_size, static_cast<int64_t>(all.size())));
    std::stable_sort(all.begin(), all.end(),
                     [](const Extension& a, const Extension& b) { return a.log_prob > b.log_prob; });
    std::vector<Live> kept;
    std::vector<Hypothesis> this_step;
    for (size_t j = 0; j < k; ++j) {
      const Extension& e = all[j];
      Hypothesis h = live[e.from].h;
      h.tokens.push_back(e.token);
      h.log_prob = e.log_prob;
      h.finished = e.token == o.eos;
      this_step.push_back(h);
      if (h.finished)
        finished.push_back(std::move(h));
      else
        kept.push_back({std::move(h), next_states[e.from]});
    }
    result.steps.push_back(std::move(this_step));
    live = std::move(kept);
  }
  // The candidates: every finished sequence, and those cut at max_len.
  for (Live& l : live) finished.push_back(std::move(l.h));
  const auto best = std::max_element(finished.begin(), finished.end(), [&](const Hypothesis& a, const Hypothesis& b) {
    return a.score(o.alpha) < b.score(o.alpha);  // the first of equal scores wins
  });
  result.best = *best;
  result.score = best->score(o.alpha);
  result.tokens = best->tokens;
  if (best->finished) result.tokens.pop_back();
  return result;
}

}  // namespace qkv::lesson

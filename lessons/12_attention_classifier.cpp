// Lesson 12 · an attention text classifier
//
// Walks through:
//   004 1.简介      attention's three parts: input, weight computation, output
//   004 3.1 概览    the five steps: 对输入进行嵌入; 将输入进行特征提取; 通过注意力权重矩阵计算;
//                   拼接输出; 使用输出进行预测或决策
//   004 3.2 模型实现 the notes' single-head attention model (SingleHeadAttentionModel),
//                   trained with AdamW and cross-entropy from a shuffling DataLoader
//
// The learner sees why the notes' model cannot run (its shapes, computed),
// then a single-head attention classifier that does, step by step:
// Embedding -> features of each word at its position -> one learned query
// attending over the words (padding masked) -> the weighted sum -> a small
// classifier head. Beside it, with the same head, data and training: lesson
// 01's idea, the average of the word vectors, and the attention model
// without positions. All three train for the same number of epochs on the
// same batches, and the lesson reports each one's training accuracy and
// whether all three fit the training sentences before it compares them
// held out; every sentence of its verdict is chosen from the numbers (the
// test recomputes the choice). qkv's sentiment corpus has four kinds of sentence
// (plain, a negation, a negation far from its word, a contrast with "but"
// whose second clause decides), and the held-out accuracy of each model on
// each kind shows where averaging loses: "the food was bad but the staff was
// friendly" and "the staff was friendly but the food was bad" have the same
// words, hence the same average and the same prediction, and opposite labels.
// Two held-out sentences the average gets wrong and attention gets right
// are drawn with every model's weights; and, over the held-out set, the
// attention's share on the negation and on the clause after "but".
//
// Letters: B sentences in a batch, T = num_steps tokens (padded), D the
// embedding size, F the head's hidden size, C = 2 classes.
//
// Run: build/release/lessons/12_attention_classifier [--seed S] [--epochs E] [--lr LR] [--data DIR] [--out DIR]
#include <qkv/qkv.hpp>

#include <algorithm>
#include <cmath>

#include "lesson.hpp"

using namespace qkv;

// --- the models ---------------------------------------------------------------------

// Step 5, the same for every model: (B, D) -> Linear(D, F) -> relu -> Linear(F, C) -> logits (B, C).
class ClassifierHead : public nn::Module {
 public:
  ClassifierHead(int64_t embed, int64_t hidden, int64_t classes, Generator& gen) {
    hidden_layer = register_module("hidden", std::make_shared<nn::Linear>(embed, hidden, true, gen));
    output = register_module("output", std::make_shared<nn::Linear>(hidden, classes, true, gen));
  }
  Tensor forward(const Tensor& context) {
    nn::TraceScope trace(*this, {context});                          // drawn with its own shapes
    return trace.output((*output)(relu((*hidden_layer)(context))));  // (B, D) -> (B, F) -> (B, C)
  }
  std::string type_name() const override { return "ClassifierHead"; }
  std::shared_ptr<nn::Linear> hidden_layer, output;
};

// Lesson 01's average pooling over words: every valid word gets the weight 1/length.
// It is attention whose scores are all equal: masked_softmax of zeros.
//   X (B, T) ids, valid_len (B) -> logits (B, C)
class AveragePooling : public nn::Module {
 public:
  AveragePooling(int64_t vocab_size, int64_t embed, int64_t hidden, int64_t classes, Generator& gen) {
    embedding = register_module("embedding", std::make_shared<nn::Embedding>(vocab_size, embed, gen));
    head = register_module("head", std::make_shared<ClassifierHead>(embed, hidden, classes, gen));
  }
  Tensor forward(const IntTensor& X, const IntTensor& valid_len) {
    nn::TraceScope trace(*this, {X, valid_len});  // drawn with both inputs, the ids and their lengths
    const int64_t B = X.size(0), T = X.size(1);
    Tensor embedded = (*embedding)(X);                         // (B, T) -> (B, T, D)
    weights = masked_softmax(zeros({B, 1, T}), valid_len);     // (B, 1, T): 1/length on each valid word
    Tensor context = bmm(weights, embedded).reshape({B, -1});  // (B, 1, T) x (B, T, D) -> (B, D)
    weights = weights.reshape({B, T});                         // kept for drawing
    return trace.output(head->forward(context));               // (B, C)
  }
  Tensor operator()(const IntTensor& X, const IntTensor& valid_len) { return forward(X, valid_len); }
  std::string type_name() const override { return "AveragePooling"; }
  std::shared_ptr<nn::Embedding> embedding;
  std::shared_ptr<ClassifierHead> head;
  Tensor weights;  // (B, T) of the last forward
};

// The notes' five steps, one module. With a single query the attention is "which words matter
// for the label"; the keys are features of each word at its position, the values the words'
// embeddings. Without positions the keys see only the word, as a bag of words does.
//   X (B, T) ids, valid_len (B) -> logits (B, C)
class AttentionClassifier : public nn::Module {
 public:
  AttentionClassifier(int64_t vocab_size, int64_t embed, int64_t hidden, int64_t classes, int64_t num_steps,
                      bool positions, Generator& gen)
      : positions(positions) {
    embedding = register_module("embedding", std::make_shared<nn::Embedding>(vocab_size, embed, gen));
    position = register_module("position", std::make_shared<nn::PositionalEncoding>(embed, 0.0f, num_steps, gen));
    features = register_module("features", std::make_shared<nn::Linear>(embed, embed, true, gen));
    register_parameter("query", query, randn({embed}, gen));  // binds the member query (D)
    attention = register_module("attention", std::make_shared<nn::DotProductAttention>(0.0f, gen));
    head = register_module("head", std::make_shared<ClassifierHead>(embed, hidden, classes, gen));
  }

  Tensor forward(const IntTensor& X, const IntTensor& valid_len) {
    nn::TraceScope trace(*this, {X, valid_len});  // drawn with both inputs, the ids and their lengths
    const int64_t B = X.size(0), D = query.size(0);
    Tensor embedded = (*embedding)(X);                             // step 1 嵌入: (B, T) -> (B, T, D)
    Tensor placed = positions ? (*position)(embedded) : embedded;  // + P[t]: where each word stands (B, T, D)
    Tensor keys = tanh((*features)(placed));                       // step 2 特征提取: (B, T, D)
    Tensor q = expand(query.reshape({1, 1, D}), {B, 1, D});        // step 3: one learned query (B, 1, D)
    Tensor context = (*attention)(q, keys, embedded, valid_len);   // softmax(q·kᵀ/√D) · values: (B, 1, D)
    return trace.output(head->forward(context.reshape({B, D})));   // steps 4, 5: (B, D) -> (B, C)
  }
  Tensor operator()(const IntTensor& X, const IntTensor& valid_len) { return forward(X, valid_len); }
  // The last forward's attention weights, (B, 1, T) -> (B, T).
  Tensor weights() const { return attention->attention_weights.reshape({attention->attention_weights.size(0), -1}); }

  std::string type_name() const override { return "AttentionClassifier"; }
  bool positions;
  std::shared_ptr<nn::Embedding> embedding;
  std::shared_ptr<nn::PositionalEncoding> position;
  std::shared_ptr<nn::Linear> features;
  std::shared_ptr<nn::DotProductAttention> attention;
  std::shared_ptr<ClassifierHead> head;
  Tensor query;  // (D)
};

// --- the data -------------------------------------------------------------------------

// The corpus' four kinds of sentence (data/README.md), told apart by their words.
const std::vector<std::string> KINDS = {"plain", "negation", "far negation", "contrast"};
bool is_negation(const std::string& w) { return w == "not" || w == "never" || w == "nobody"; }
size_t kind_of(const std::vector<std::string>& words) {
  auto has = [&](const std::string& w) { return std::find(words.begin(), words.end(), w) != words.end(); };
  if (has("but")) return 3;   // "the food was good but the service was slow": the second clause decides
  if (has("that")) return 2;  // "i do not think that the room was clean": the negation 4+ words before its word
  if (std::any_of(words.begin(), words.end(), is_negation)) return 1;  // "the room was not clean"
  return 0;                                                            // "the room was clean"
}

struct Split {
  data::LabeledText text;
  data::TokenArray array;     // (N, T) ids, (N) valid lengths
  std::vector<size_t> kinds;  // index into KINDS, per sentence
  std::vector<int64_t> labels;
  int64_t size() const { return static_cast<int64_t>(labels.size()); }
};
// The lesson's two classes: 0 negative, 1 positive. Both files are read with
// them, so a label outside them is an error naming the file, the line and the label.
constexpr int64_t kClasses = 2;
Split read_split(const std::filesystem::path& file) {  // the ids (array) are made once the vocabulary is
  Split s;
  s.text = data::read_text_classification(file.string(), kClasses);
  for (const auto& words : s.text.tokens) s.kinds.push_back(kind_of(words));
  s.labels = s.text.labels.to_vector();
  return s;
}

// --- training and scoring -----------------------------------------------------------------

struct Curve {
  std::vector<double> losses, accuracies;  // per epoch, over the training sentences
};

// AdamW on cross-entropy, the loader's own seed so that every model sees the same batches.
template <class Model>
Curve train(lesson::Lesson& lesson, Model& model, const Split& train_split, int64_t epochs, int64_t batch_size,
            float lr) {
  Generator shuffle_gen(lesson.seed() + 1);
  data::DataLoader loader(
      data::TensorDataset(train_split.array.array, train_split.array.valid_len, train_split.text.labels),
      {.batch_size = batch_size, .shuffle = true}, shuffle_gen);
  optim::AdamW optimizer(model.parameters(), lr);
  nn::set_need_weights(model, false);  // training draws no weights: the fused attention
  Curve curve;
  lesson::Progress progress = lesson.progress("epoch", epochs);
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    model.train();
    double loss_sum = 0;
    int64_t right = 0;
    for (auto& [X, valid_len, y] : loader) {
      optimizer.zero_grad();
      Tensor logits = model(X, valid_len);     // (B, T), (B) -> (B, C)
      Tensor loss = cross_entropy(logits, y);  // (B, C) x (B) -> ()
      lesson::check_finite_loss(loss.item(), "epoch", epoch + 1);
      loss.backward();
      optimizer.step();
      loss_sum += loss.item() * static_cast<double>(X.size(0));
      std::vector<int64_t> p = argmax(logits.detach(), 1).to_vector(), t = y.to_vector();
      for (size_t i = 0; i < p.size(); ++i) right += p[i] == t[i];
    }
    curve.losses.push_back(loss_sum / static_cast<double>(train_split.size()));
    curve.accuracies.push_back(static_cast<double>(right) / static_cast<double>(train_split.size()));
    progress.update(epoch + 1, {{"loss", curve.losses.back()}, {"accuracy", curve.accuracies.back()}});
  }
  progress.finish();
  nn::set_need_weights(model, true);  // score() reads them
  return curve;
}

// A trained model on the held-out sentences: its prediction and weights for each.
struct Scored {
  std::vector<int64_t> predicted;
  Tensor weights;  // (N, T)
};
template <class Model>
Scored score(Model& model, const Split& split) {
  model.eval();
  NoGradGuard no_grad;
  Tensor logits = model(split.array.array, split.array.valid_len);  // (N, C)
  Tensor weights = [&] {
    if constexpr (requires { model.weights(); })
      return model.weights();  // AttentionClassifier
    else
      return model.weights;  // AveragePooling
  }();
  return {argmax(logits, 1).to_vector(), weights};
}

// The fraction right, of all sentences (kind < 0) or of one kind.
double accuracy(const std::vector<int64_t>& predicted, const Split& split, int kind = -1) {
  int64_t right = 0, n = 0;
  for (size_t i = 0; i < predicted.size(); ++i) {
    if (kind >= 0 && split.kinds[i] != static_cast<size_t>(kind)) continue;
    right += predicted[i] == split.labels[i];
    ++n;
  }
  return n > 0 ? static_cast<double>(right) / static_cast<double>(n) : 0.0;
}

// --- sections -------------------------------------------------------------------------------

void five_steps(lesson::Lesson& lesson) {
  lesson.section("1.简介 and 3.1 概览: attention in five steps");
  lesson.print(
      "1.简介: an attention model has three parts: the input, the weight computation, the output.\n"
      "3.1 概览 spells it out in five steps, which the model below follows in its forward():\n"
      "  1. 对输入进行嵌入            Embedding: word ids (B, T) -> vectors (B, T, D)\n"
      "  2. 将输入进行特征提取        keys = tanh(Linear(D, D)(embedded + P)): what each word offers to be\n"
      "                               scored by; P is lesson 10's positional encoding, so a key knows\n"
      "                               where its word stands\n"
      "  3. 通过注意力权重矩阵计算    one learned query q: weights = masked_softmax(q·kᵀ/√D) (B, T),\n"
      "                               padding masked by the valid lengths\n"
      "  4. 拼接输出                  the values (the embedded words) summed with those weights: (B, D);\n"
      "                               one head has nothing to concatenate (several heads' outputs are\n"
      "                               joined here, as in lesson 09)\n"
      "  5. 使用输出进行预测或决策    Linear(D, F) -> relu -> Linear(F, 2): logits\n");
  lesson.erratum(
      "004 1.简介 says attention is \"also called SENN (Selective Encoding Neural Network)\", with no source.\n"
      "The name is not in the attention literature (Bahdanau et al. 2015, Vaswani et al. 2017, d2l); read it\n"
      "as the notes' own label, not a term to search for.");
}

void notes_model(lesson::Lesson& lesson) {
  lesson.section("3.2 模型实现: the notes' model, and why it cannot run");
  // The notes' sizes: EMBEDDING_DIM 5, HIDDEN_SIZE 10, MAX_LEN 5, and a batch of their 3 texts.
  const int64_t E = 5, Hs = 10, L = 5, Bn = 3;
  Generator notes_gen(lesson.seed());
  Tensor embedded = unsqueeze(randn({Bn, L, E}, notes_gen), 1);  // (3, 5, 5) -> (3, 1, 5, 5): .unsqueeze(1)
  Tensor joined = cat({embedded, embedded}, -1);                 // (3, 1, 5, 10): cat([embedded, embedded], dim=-1)
  nn::Linear attn((Hs + E) * L, Hs * L, true, notes_gen);        // nn.Linear((10 + 5)·5 = 75, 10·5 = 50)
  lesson.print("embedded.unsqueeze(1) {}, cat([embedded, embedded], -1) {}\n", embedded.shape(), joined.shape());
  lesson.print("self.attn = Linear({}, {}) applied to it:\n", (Hs + E) * L, Hs * L);
  std::string message;
  try {
    attn(joined);
  } catch (const Error& e) {
    message = e.what();
  }
  lesson.print("  {}\n", message.empty() ? "(no error?)" : message);
  lesson.result("notes_model_error", message);
  lesson.erratum(
      "004 3.2's SingleHeadAttentionModel cannot run: cat([embedded, embedded], -1) has 2·EMBEDDING_DIM = 10\n"
      "features, but self.attn expects (HIDDEN_SIZE + EMBEDDING_DIM)·MAX_LEN = 75. Were that fixed, its\n"
      "softmax runs over dim 1, the size-1 dim unsqueeze(1) made, so every weight would be exactly 1; and fc\n"
      "expects HIDDEN_SIZE·MAX_LEN = 50 features where the context has EMBEDDING_DIM = 5. (It also reads\n"
      "`vocab`, `class_names` and F, torch.nn.functional, which it never defines.) This lesson keeps the\n"
      "notes' plan (Embedding -> attention -> Linear, one head, AdamW, cross-entropy, a shuffling\n"
      "DataLoader) with sizes that fit, a softmax over the words, padding masked, and a hidden layer in the\n"
      "head: one Linear reading a weighted average of word vectors scores a sentence by a weighted average\n"
      "of per-word scores, and adding `not` would have to raise `bad`'s score and lower `good`'s at once.");
  lesson.erratum(
      "004 3.2's forward comments its weights \"(batch_size, num_heads, seq_len, seq_len)\". Its model has one\n"
      "head and no seq_len × seq_len scores: self.attn gives (batch_size, 1, seq_len, HIDDEN_SIZE·MAX_LEN),\n"
      "were its sizes to fit. This lesson's single query gives weights (B, 1, T), one per word.");
  lesson.erratum(
      "004 3.2's code leaves model, tokenizer, train_data_loader, LEARNING_RATE and NUM_EPOCHS undefined:\n"
      "it cannot run as printed. Here they are the AttentionClassifier below, the Vocab built from the\n"
      "training sentences (words to ids), a data::DataLoader over the padded ids, --lr and --epochs.");
  lesson.erratum(
      "004 3.2's training loop calls pad_sequences and to_categorical, which are Keras functions, not\n"
      "PyTorch's, in a PyTorch loop. Here data::build_array pads each sentence with <pad> to num_steps and\n"
      "keeps its valid length (for the mask), and cross_entropy takes the class ids as they are, as\n"
      "PyTorch's CrossEntropyLoss does: no one-hot labels.");
}

void show_data(lesson::Lesson& lesson, const Split& train_split, const Split& test_split, const data::Vocab& vocab,
               int64_t num_steps) {
  lesson.section("The data: four kinds of sentence, a vocabulary, a DataLoader");
  lesson.print("{} training and {} held-out sentences, half of each positive (1), half negative (0); a\n",
               train_split.size(), test_split.size());
  lesson.print("vocabulary of {} tokens (with <unk>, <pad>); each sentence padded to T = {} ids.\n", vocab.size(),
               num_steps);
  lesson.print("{:<13} {:>8} {:>9}   an example from the held-out set\n", "kind", "training", "held-out");
  for (size_t k = 0; k < KINDS.size(); ++k) {
    auto count = [&](const Split& s) { return std::count(s.kinds.begin(), s.kinds.end(), k); };
    // A --data folder may have no held-out sentence of a kind.
    const auto example =
        static_cast<size_t>(std::find(test_split.kinds.begin(), test_split.kinds.end(), k) - test_split.kinds.begin());
    const std::string shown =
        example == test_split.kinds.size()
            ? "(none)"
            : fmt::format("\"{}\" {}", fmt::join(test_split.text.tokens[example], " "), test_split.labels[example]);
    lesson.print("{:<13} {:>8} {:>9}   {}\n", KINDS[k], count(train_split), count(test_split), shown);
  }
  lesson.print(
      "In a contrast the clause after \"but\" decides, and both orders of two clauses are as likely: the\n"
      "words alone cannot tell \"A but B\" from \"B but A\". The held-out set has more of the hard kinds.\n");
  lesson.print("first sentence: \"{}\" (label {}) -> ids [{}], valid length {}\n",
               fmt::join(train_split.text.tokens[0], " "), train_split.labels[0],
               fmt::join(train_split.array.array.data(), train_split.array.array.data() + num_steps, ", "),  // row 0
               train_split.array.valid_len.at({0}));
}

// The models' held-out accuracy, kind by kind, then over all sentences.
void accuracy_table(lesson::Lesson& lesson, const Split& test_split, const std::vector<std::string>& names,
                    const std::vector<const Scored*>& models) {
  std::string line = fmt::format("{:<13} {:>4}", "kind", "n");
  for (const std::string& name : names) line += fmt::format("  {:>22}", name);
  lesson.print("{}\n", line);
  for (size_t k = 0; k <= KINDS.size(); ++k) {
    const bool all = k == KINDS.size();
    const int kind = all ? -1 : static_cast<int>(k);
    const auto n = all ? test_split.size() : std::count(test_split.kinds.begin(), test_split.kinds.end(), k);
    line = fmt::format("{:<13} {:>4}", all ? "all" : KINDS[k], n);
    for (const Scored* m : models) line += fmt::format("  {:>22.3f}", accuracy(m->predicted, test_split, kind));
    lesson.print("{}\n", line);
  }
}

// "A but B" -> "B but A": the same words, the opposite label.
std::vector<std::string> swap_clauses(const std::vector<std::string>& words) {
  auto but = std::find(words.begin(), words.end(), "but");
  std::vector<std::string> out(but + 1, words.end());
  out.emplace_back("but");
  out.insert(out.end(), words.begin(), but);
  return out;
}

// P(positive) of one sentence under a trained model.
template <class Model>
double positive(Model& model, const std::vector<std::string>& words, const data::Vocab& vocab, int64_t num_steps) {
  NoGradGuard no_grad;
  data::TokenArray one = data::build_array({words}, vocab, num_steps);  // (1, T), (1)
  return softmax(model(one.array, one.valid_len), 1).at({0, 1});        // (1, C) -> P(label 1)
}

// Up to two held-out sentences that averaging gets wrong and attention right, contrasts first,
// each drawn with every model's weights (one row per model, the colour scale fixed at 0 … 1).
std::vector<int64_t> two_examples(lesson::Lesson& lesson, const Split& test_split,
                                  const std::vector<std::string>& names, const std::vector<const Scored*>& models) {
  const Scored &average = *models.front(), &attention = *models.back();
  std::vector<int64_t> picked;
  for (size_t kind : {3, 2, 1, 0})
    for (int64_t i = 0; i < test_split.size() && picked.size() < 2; ++i) {
      const auto u = static_cast<size_t>(i);
      if (test_split.kinds[u] == kind && average.predicted[u] != test_split.labels[u] &&
          attention.predicted[u] == test_split.labels[u])
        picked.push_back(i);
    }
  if (picked.empty()) lesson.print("(no held-out sentence here that averaging gets wrong and attention right)\n");
  for (size_t k = 0; k < picked.size(); ++k) {
    const int64_t i = picked[k];
    const auto u = static_cast<size_t>(i);
    const std::vector<std::string>& words = test_split.text.tokens[u];
    const auto len = static_cast<int64_t>(words.size());
    std::vector<Tensor> rows;
    std::vector<std::string> said;
    for (size_t m = 0; m < models.size(); ++m) {
      rows.push_back(slice(slice(models[m]->weights, 0, i, i + 1), 1, 0, len));  // (1, len): the valid words
      said.push_back(fmt::format("{} {}", names[m], models[m]->predicted[u]));
    }
    lesson.heatmap(fmt::format("attention_sentence_{}.svg", k), cat(rows, 0),  // models x (1, len) -> (models, len)
                   {.title = fmt::format("\"{}\": label {}", fmt::join(words, " "), test_split.labels[u]),
                    .xlabel = fmt::format("words; predicted: {}", fmt::join(said, ", ")),
                    .ylabel = "model",
                    .row_labels = names,
                    .col_labels = words,
                    .vmin = 0,
                    .vmax = 1});
    lesson.print("{}, label {}; predicted: {}\n\n", KINDS[test_split.kinds[u]], test_split.labels[u],
                 fmt::join(said, ", "));
  }
  return picked;
}

// Over the held-out sentences: the attention on the negation words and on the clause after "but",
// each against the share the same words would get from uniform weights (averaging).
struct Shares {
  int64_t negated = 0, contrasts = 0;
  double negation = 0, negation_uniform = 0, second_clause = 0, second_clause_uniform = 0;
};
Shares attention_shares(const Split& test_split, const Tensor& weights) {
  Shares s;
  for (int64_t i = 0; i < test_split.size(); ++i) {
    const std::vector<std::string>& words = test_split.text.tokens[static_cast<size_t>(i)];
    const auto len = static_cast<int64_t>(words.size());
    double on_negation = 0, after_but = 0;
    int64_t negations = 0, but = -1;
    for (int64_t t = 0; t < len; ++t) {
      const std::string& w = words[static_cast<size_t>(t)];
      if (is_negation(w)) {
        on_negation += weights.at({i, t});
        ++negations;
      }
      if (but >= 0) after_but += weights.at({i, t});
      if (w == "but") but = t;
    }
    if (negations > 0) {  // per negation word, against 1/length
      s.negation += on_negation / static_cast<double>(negations);
      s.negation_uniform += 1.0 / static_cast<double>(len);
      ++s.negated;
    }
    if (but >= 0) {  // the whole second clause, against its length/length
      s.second_clause += after_but;
      s.second_clause_uniform += static_cast<double>(len - but - 1) / static_cast<double>(len);
      ++s.contrasts;
    }
  }
  auto mean = [](double& sum, int64_t n) { sum = n > 0 ? sum / static_cast<double>(n) : 0; };
  mean(s.negation, s.negated);
  mean(s.negation_uniform, s.negated);
  mean(s.second_clause, s.contrasts);
  mean(s.second_clause_uniform, s.contrasts);
  return s;
}

// The held-out sentences as results.json keeps them: one line each.
std::string lines_of(const Split& split, bool kinds) {
  std::string out;
  for (int64_t i = 0; i < split.size(); ++i) {
    const auto u = static_cast<size_t>(i);
    out += kinds ? KINDS[split.kinds[u]] + "\n" : fmt::format("{}\n", fmt::join(split.text.tokens[u], " "));
  }
  return out;
}

std::vector<double> doubles(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

// --- the sections of the comparison ---------------------------------------------------------

const std::vector<std::string> NAMES = {"average", "attn", "attn + P"};  // short: they label the pictures' rows
struct Training {
  int64_t epochs, batch_size;
  float lr;
};
struct Curves {
  Curve average, unordered, attention;
};

// A model fits the training sentences when its last epoch gets at least this fraction of them right.
constexpr double kFitted = 0.99;
bool fitted(const Curve& c) { return c.accuracies.back() >= kFitted; }

// What the three training curves end at, and whether the comparison after it is fair.
std::string fitted_sentence(const Curves& c, int64_t epochs) {
  const std::string accuracies = fmt::format(
      "After {} epochs on the same batches, training accuracy: average {:.3f}, attn {:.3f}, attn + P {:.3f}.", epochs,
      c.average.accuracies.back(), c.unordered.accuracies.back(), c.attention.accuracies.back());
  if (fitted(c.average) && fitted(c.unordered) && fitted(c.attention))
    return fmt::format(
        "{}\nAll three fit the training sentences (each at least {}), so what tells them apart held out is\n"
        "what each can represent, not how long it trained.",
        accuracies, kFitted);
  std::vector<std::string> short_of;
  if (!fitted(c.average)) short_of.emplace_back("average");
  if (!fitted(c.unordered)) short_of.emplace_back("attn");
  if (!fitted(c.attention)) short_of.emplace_back("attn + P");
  return fmt::format(
      "{}\nNot all of them fit the training sentences: {} stayed below {}, so {} held-out numbers\n"
      "say as much about too short a training as about the model (try more --epochs).",
      accuracies, fmt::join(short_of, ", "), kFitted, short_of.size() == 1 ? "its" : "their");
}

Curves train_all(lesson::Lesson& lesson, AveragePooling& average, AttentionClassifier& unordered,
                 AttentionClassifier& attention, const Split& train_split, const Training& t) {
  lesson.section("Training with AdamW and cross-entropy, and two models to compare");
  lesson.print("{}\n", attention.repr());
  lesson.draw_model("model.svg", attention, [&] { attention(train_split.array.array, train_split.array.valid_len); },
                    {.title = "The attention classifier (attn + P), drawn from one forward on the training sentences"});
  lesson.print(
      "This is attn + P. Beside it, the same head on lesson 01's average pooling, `average` (every valid\n"
      "word weighs 1/length: masked_softmax of equal scores), and `attn`, the attention model without P\n"
      "(its keys see only the word).\n"
      "Each: AdamW lr {}, weight decay 0.01, {} epochs of {} shuffled batches of {}; loss =\n"
      "cross_entropy(logits, labels), the batch mean; the same loader seed, so the same batches.\n",
      t.lr, t.epochs, (train_split.size() + t.batch_size - 1) / t.batch_size, t.batch_size);
  Curves c;
  lesson.print("{}:\n", NAMES[0]);
  c.average = train(lesson, average, train_split, t.epochs, t.batch_size, t.lr);
  lesson.print("{}:\n", NAMES[1]);
  c.unordered = train(lesson, unordered, train_split, t.epochs, t.batch_size, t.lr);
  lesson.print("{}:\n", NAMES[2]);
  c.attention = train(lesson, attention, train_split, t.epochs, t.batch_size, t.lr);
  std::vector<float> epoch_numbers;
  for (int64_t e = 1; e <= t.epochs; ++e) epoch_numbers.push_back(static_cast<float>(e));
  auto floats = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  lesson.line_plot("training.svg",
                   {{"attn + P: loss", epoch_numbers, floats(c.attention.losses)},
                    {"attn + P: accuracy", epoch_numbers, floats(c.attention.accuracies)},
                    {"attn: loss", epoch_numbers, floats(c.unordered.losses)},
                    {"attn: accuracy", epoch_numbers, floats(c.unordered.accuracies)},
                    {"average: loss", epoch_numbers, floats(c.average.losses)},
                    {"average: accuracy", epoch_numbers, floats(c.average.accuracies)}},
                   {.title = "Training loss and accuracy per epoch, the three models",
                    .xlabel = "epoch",
                    .ylabel = "loss (cross-entropy), accuracy"});
  lesson.print("{}\n", fitted_sentence(c, t.epochs));
  return c;
}

// Held-out accuracies within this distance of 0.5 are "a coin's": the model has not learned the order.
constexpr double kNearCoin = 0.15;

// What the contrasts show, from their accuracies: one sentence, as printed and summarised.
std::string contrast_sentence(const Split& test_split, const std::vector<const Scored*>& models) {
  const double average = accuracy(models[0]->predicted, test_split, 3),
               unordered = accuracy(models[1]->predicted, test_split, 3),
               attention = accuracy(models[2]->predicted, test_split, 3);
  const bool blind_near_coin = std::abs(average - 0.5) <= kNearCoin && std::abs(unordered - 0.5) <= kNearCoin;
  return fmt::format(
      "On held-out contrasts, whose label the order of the clauses decides, average gets {:.3f} and attn {:.3f}{}:\n"
      "neither can read the order, since both give \"A but B\" and \"B but A\" the same output. attn + P, whose\n"
      "weights depend on where each word stands, gets {:.3f}{}.",
      average, unordered, blind_near_coin ? fmt::format(" (within {} of a coin's 0.5)", kNearCoin) : "", attention,
      attention > std::max(average, unordered)
          ? fmt::format(", {:.3f} above the better of the two", attention - std::max(average, unordered))
          : ", no better: here the positions did not help");
}

// Where the words alone decide (plain, negation, far negation), every kind on which attn + P is not the
// best, with the counts behind the accuracies; or that it is the best on all three.
std::string word_kinds_sentence(const Split& test_split, const std::vector<const Scored*>& models) {
  std::vector<std::string> below;
  for (int k = 0; k < 3; ++k) {
    const auto n = std::count(test_split.kinds.begin(), test_split.kinds.end(), static_cast<size_t>(k));
    const double p = accuracy(models[2]->predicted, test_split, k);
    for (size_t m = 0; m < 2; ++m) {
      const double other = accuracy(models[m]->predicted, test_split, k);
      if (other > p)
        below.push_back(fmt::format("on {} sentences {} gets {:.3f} and attn + P {:.3f}, {} of {} fewer right",
                                    KINDS[k], NAMES[m], other, p, std::lround((other - p) * static_cast<double>(n)),
                                    n));
    }
  }
  if (below.empty())
    return "On the kinds the words alone decide (plain, negation, far negation), attn + P is at least as good as\n"
           "either other model on each.";
  return fmt::format("Where the words alone decide, attn + P is below another model on some kinds:\n{}.",
                     fmt::join(below, ";\n"));
}

void held_out(lesson::Lesson& lesson, const Split& test_split, const std::vector<const Scored*>& models) {
  lesson.section("Held-out accuracy, kind by kind");
  accuracy_table(lesson, test_split, NAMES, models);
  lesson.print("{}\n{}\n\n", contrast_sentence(test_split, models), word_kinds_sentence(test_split, models));
}

// Each contrast among the examples, and the same with its clauses swapped: P(positive) under
// averaging and under attn + P, pair by pair; and how many pairs attn + P turns with the order.
struct Swaps {
  std::vector<double> average, unordered, attention;
  int64_t turned = 0;
};
Swaps swap_examples(lesson::Lesson& lesson, const Split& test_split, const std::vector<int64_t>& examples,
                    AveragePooling& average, AttentionClassifier& unordered, AttentionClassifier& attention,
                    const data::Vocab& vocab, int64_t num_steps) {
  lesson.print("Both pictures use one colour scale, 0 to 1. Each contrast with its clauses swapped, P(positive):\n");
  Swaps s;
  for (int64_t i : examples) {
    const std::vector<std::string>& words = test_split.text.tokens[static_cast<size_t>(i)];
    if (test_split.kinds[static_cast<size_t>(i)] != 3) continue;
    for (const auto& sentence : {words, swap_clauses(words)}) {
      const double a = positive(average, sentence, vocab, num_steps),
                   u = positive(unordered, sentence, vocab, num_steps),
                   p = positive(attention, sentence, vocab, num_steps);
      s.average.push_back(a);
      s.unordered.push_back(u);
      s.attention.push_back(p);
      lesson.print("  {:<60} average {:.3f}  attn {:.3f}  attn + P {:.3f}\n",
                   fmt::format("\"{}\"", fmt::join(sentence, " ")), a, u, p);
    }
  }
  for (size_t k = 0; k + 1 < s.attention.size(); k += 2)  // the label flips with the order: does the prediction?
    s.turned += (s.attention[k] > 0.5) != (s.attention[k + 1] > 0.5);
  lesson.print(
      "average and attn are the same for both orders (the same words, weighed and summed without their places);\n"
      "attn + P turns with the order in {} of {}.\n",
      s.turned, s.attention.size() / 2);
  return s;
}

void print_shares(lesson::Lesson& lesson, const Shares& shares) {
  lesson.section("Where the attention goes");
  lesson.print("{} held-out sentences hold a negation (not, never, nobody): attn + P puts {:.3f} on the\n",
               shares.negated, shares.negation);
  lesson.print("negation word, where averaging gives each word {:.3f} ({:.1f}×).\n", shares.negation_uniform,
               shares.negation_uniform > 0 ? shares.negation / shares.negation_uniform : 0.0);
  lesson.print("{} hold a contrast: it puts {:.3f} on the clause after \"but\", which decides, where averaging\n",
               shares.contrasts, shares.second_clause);
  lesson.print("gives that clause {:.3f}.\n", shares.second_clause_uniform);
}

// results.json: every held-out sentence with its kind, label and each model's prediction, so that a
// reader can recount every accuracy printed; the attention weights, curves, examples and shares.
void save_results(lesson::Lesson& lesson, const Split& test_split, const std::vector<const Scored*>& models,
                  const Curves& curves, const std::vector<int64_t>& examples, const Swaps& swaps,
                  const Shares& shares) {
  lesson.result("kinds", std::string("plain\nnegation\nfar negation\ncontrast\n"));
  lesson.result("test_sentences", lines_of(test_split, false));
  lesson.result("test_kinds", lines_of(test_split, true));
  lesson.result("test_labels", doubles(test_split.labels));
  const std::vector<std::string> keys = {"average", "unordered", "attention"};
  for (size_t m = 0; m < models.size(); ++m) {
    lesson.result(keys[m] + "_predictions", doubles(models[m]->predicted));
    lesson.result(m == 2 ? "test_accuracy" : keys[m] + "_test_accuracy", accuracy(models[m]->predicted, test_split));
    std::vector<double> by_kind;
    for (size_t k = 0; k < KINDS.size(); ++k)
      by_kind.push_back(accuracy(models[m]->predicted, test_split, static_cast<int>(k)));
    lesson.result(keys[m] + "_kind_accuracies", by_kind);
  }
  lesson.result("losses", curves.attention.losses);
  lesson.result("train_accuracies", curves.attention.accuracies);
  lesson.result("average_losses", curves.average.losses);
  lesson.result("average_train_accuracies", curves.average.accuracies);
  lesson.result("unordered_losses", curves.unordered.losses);
  lesson.result("unordered_train_accuracies", curves.unordered.accuracies);
  lesson.result("fitted_threshold", kFitted);
  lesson.result("near_coin", kNearCoin);
  lesson.result("test_weights", models[2]->weights);
  lesson.result("examples", doubles(examples));
  lesson.result("swapped_average", swaps.average);
  lesson.result("swapped_unordered", swaps.unordered);
  lesson.result("swapped_attention", swaps.attention);
  lesson.result("swaps_turned", swaps.turned);
  lesson.result("negated_sentences", shares.negated);
  lesson.result("negation_share", shares.negation);
  lesson.result("uniform_share", shares.negation_uniform);
  lesson.result("contrast_sentences", shares.contrasts);
  lesson.result("second_clause_share", shares.second_clause);
  lesson.result("second_clause_uniform_share", shares.second_clause_uniform);
}

// Both files read, the vocabulary of the training sentences, every sentence as T ids; then shown.
struct Corpus {
  Split train, test;
  data::Vocab vocab;
};
Corpus read_corpus(lesson::Lesson& lesson, int64_t num_steps) {
  Split train_split = read_split(lesson.data() / "sentiment" / "train.txt");
  Split test_split = read_split(lesson.data() / "sentiment" / "test.txt");
  data::Vocab vocab(train_split.text.tokens, /*min_freq=*/1, {"<pad>"});
  for (Split* s : {&train_split, &test_split}) {
    for (const auto& words : s->text.tokens)
      if (static_cast<int64_t>(words.size()) > num_steps)
        fail("12_attention_classifier: \"{}\" has {} words, more than T = {}", fmt::join(words, " "), words.size(),
             num_steps);
    s->array = data::build_array(s->text.tokens, vocab, num_steps);  // (N, T), (N)
  }
  show_data(lesson, train_split, test_split, vocab, num_steps);
  return {std::move(train_split), std::move(test_split), std::move(vocab)};
}

// What the lesson will show, printed before its first section.
void what_you_will_see(lesson::Lesson& lesson) {
  lesson.print(
      "What this lesson shows: the notes' single-head attention classifier made to run, and trained beside\n"
      "two models with the same head, data and training budget: the average of the word vectors, and\n"
      "attention without positions. Each one's training accuracy first, then held-out accuracy kind by kind,\n"
      "two sentences drawn with every model's weights, and where the attention goes.\n");
}

// What to keep from it, printed before the summary.
void what_to_remember(lesson::Lesson& lesson) {
  lesson.print(
      "\nWhat to remember: a weighted average of word vectors is the same whatever the order of the words, so\n"
      "averaging, and attention whose keys see only the word, cannot read an order a label depends on; add\n"
      "the positions to the keys and the weights can. Compare models only once each has fit its training\n"
      "data: otherwise the comparison measures the training, not the model.\n");
}

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 12);
  // 50 epochs: at seeds 0-2 all three models fit the training sentences by then (the lesson checks it and
  // says so), and the run still takes seconds.
  int64_t epochs = 50, batch_size = 32, embed = 32, hidden = 32;
  const int64_t num_steps = 16;  // T: the corpus' longest sentence has 12 words
  float lr = 0.01f;
  lesson.option("--epochs", epochs, "passes over the training sentences", {.max = 10'000});
  lesson.option("--batch-size", batch_size, "sentences per minibatch", {.max = 4096});
  lesson.option("--embed", embed, "embedding size D (even: the positional encoding pairs sin and cos)",
                {.min = 2, .max = 1024});
  lesson.option("--hidden", hidden, "hidden units F of the classifier head", {.max = 4096});
  lesson.option("--lr", lr, "AdamW learning rate");
  lesson.data_option();
  lesson.start();
  if (epochs < 1 || batch_size < 1 || hidden < 1 || embed < 2 || embed % 2 != 0)
    fail(
        "12_attention_classifier: --epochs {}, --batch-size {} and --hidden {} must be at least 1, and --embed {} "
        "even and at least 2",
        epochs, batch_size, hidden, embed);

  what_you_will_see(lesson);
  five_steps(lesson);
  notes_model(lesson);

  Corpus corpus = read_corpus(lesson, num_steps);
  Split &train_split = corpus.train, &test_split = corpus.test;
  const data::Vocab& vocab = corpus.vocab;

  // Three models, each from the same seed: the same first draws, the same batches.
  const int64_t V = vocab.size(), C = train_split.text.num_classes;
  Generator gen_average(lesson.seed()), gen_unordered(lesson.seed()), gen_attention(lesson.seed());
  AveragePooling average(V, embed, hidden, C, gen_average);
  AttentionClassifier unordered(V, embed, hidden, C, num_steps, /*positions=*/false, gen_unordered);
  AttentionClassifier attention(V, embed, hidden, C, num_steps, /*positions=*/true, gen_attention);
  const Curves curves = train_all(lesson, average, unordered, attention, train_split, {epochs, batch_size, lr});

  const Scored average_scored = score(average, test_split), unordered_scored = score(unordered, test_split),
               scored = score(attention, test_split);
  const std::vector<const Scored*> models = {&average_scored, &unordered_scored, &scored};
  held_out(lesson, test_split, models);

  lesson.section("Two sentences averaging gets wrong");
  const std::vector<int64_t> examples = two_examples(lesson, test_split, NAMES, models);
  const Swaps swaps = swap_examples(lesson, test_split, examples, average, unordered, attention, vocab, num_steps);

  const Shares shares = attention_shares(test_split, scored.weights);
  print_shares(lesson, shares);
  save_results(lesson, test_split, models, curves, examples, swaps, shares);
  what_to_remember(lesson);

  return lesson.finish(fmt::format(
      "The notes' single-head attention classifier, made to run: Embedding -> features of each word at its\n"
      "position -> one learned query over the words (padding masked) -> weighted sum -> Linear-relu-Linear.\n"
      "{}\nHeld-out accuracy: attn + P {:.3f}, attn {:.3f}, average {:.3f}.\n{}\n{}",
      fitted_sentence(curves, epochs), accuracy(scored.predicted, test_split),
      accuracy(unordered_scored.predicted, test_split), accuracy(average_scored.predicted, test_split),
      contrast_sentence(test_split, models), word_kinds_sentence(test_split, models)));
}

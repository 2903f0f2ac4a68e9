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
// Embedding -> features -> one learned query attending over the words
// (padding masked by the valid lengths) -> the weighted sum -> a small
// classifier head. It is trained on qkv's sentiment corpus (short sentences,
// about half of them negated); loss and accuracy per epoch; the held-out
// accuracy; the words a few held-out predictions attended to, drawn; and,
// over the held-out sentences with a negation, the negation word's share of
// the attention against the share of a word under uniform attention.
//
// Letters: B sentences in a batch, T = num_steps tokens (padded), D the
// embedding size, F the head's hidden size, C = 2 classes.
//
// Run: build/release/lessons/12_attention_classifier [--seed S] [--epochs E] [--lr LR] [--data DIR] [--out DIR]
#include <qkv/qkv.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "lesson.hpp"

using namespace qkv;

// The notes' five steps, one module. With a single query the attention is
// "which words matter for the label"; the keys are features of the words,
// the values the words' embeddings themselves.
//   X (B, T) ids, valid_len (B) -> logits (B, C); the weights (B, T) are kept.
class AttentionClassifier : public nn::Module {
 public:
  AttentionClassifier(int64_t vocab_size, int64_t embed, int64_t hidden, int64_t classes, Generator& gen) {
    embedding = register_module("embedding", std::make_shared<nn::Embedding>(vocab_size, embed, gen));
    features = register_module("features", std::make_shared<nn::Linear>(embed, embed, true, gen));
    register_parameter("query", query, randn({embed}, gen));  // binds the member query (embed)
    attention = register_module("attention", std::make_shared<nn::DotProductAttention>(0.0f, gen));
    hidden_layer = register_module("hidden", std::make_shared<nn::Linear>(embed, hidden, true, gen));
    output = register_module("output", std::make_shared<nn::Linear>(hidden, classes, true, gen));
  }

  Tensor forward(const IntTensor& X, const IntTensor& valid_len) {
    const int64_t B = X.size(0), D = query.size(0);
    Tensor embedded = (*embedding)(X);                       // step 1 嵌入: (B, T) -> (B, T, D)
    Tensor keys = tanh((*features)(embedded));               // step 2 特征提取: (B, T, D) -> (B, T, D)
    Tensor q = expand(query.reshape({1, 1, D}), {B, 1, D});  // step 3: one learned query per sentence (B, 1, D)
    // softmax(q·kᵀ/√D) over the valid words only, times the embedded words: (B, 1, D)
    Tensor context = (*attention)(q, keys, embedded, valid_len);
    context = context.reshape({B, D});          // step 4 拼接输出: one vector per sentence (B, D)
    Tensor h = relu((*hidden_layer)(context));  // step 5 预测: (B, D) -> (B, F)
    return (*output)(h);                        // (B, F) -> (B, C)
  }
  Tensor operator()(const IntTensor& X, const IntTensor& valid_len) { return forward(X, valid_len); }
  // The last forward's attention weights, (B, 1, T) -> (B, T).
  Tensor weights() const { return attention->attention_weights.reshape({attention->attention_weights.size(0), -1}); }

  std::string type_name() const override { return "AttentionClassifier"; }
  std::shared_ptr<nn::Embedding> embedding;
  std::shared_ptr<nn::Linear> features, hidden_layer, output;
  std::shared_ptr<nn::DotProductAttention> attention;
  Tensor query;  // (D)
};

// The number of rows of logits (N, C) whose largest entry is at the label.
int64_t correct(const Tensor& logits, const IntTensor& labels) {
  std::vector<int64_t> p = argmax(logits, 1).to_vector(), y = labels.to_vector();
  int64_t right = 0;
  for (size_t i = 0; i < p.size(); ++i) right += p[i] == y[i];
  return right;
}

bool is_negation(const std::string& token) {
  static const std::set<std::string> words = {"not",     "n't",  "never",   "no", "nobody",
                                              "nothing", "none", "neither", "nor"};
  return words.count(token) != 0 || token.ends_with("n't");
}

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 12);
  int64_t epochs = 15, batch_size = 32, embed = 32, hidden = 32, num_steps = 10;
  float lr = 0.01f;
  lesson.option("--epochs", epochs, "passes over the training sentences");
  lesson.option("--batch-size", batch_size, "sentences per minibatch");
  lesson.option("--embed", embed, "embedding size D");
  lesson.option("--hidden", hidden, "hidden units F of the classifier head");
  lesson.option("--lr", lr, "AdamW learning rate");
  lesson.data_option();
  lesson.start();
  if (epochs < 1 || batch_size < 1 || embed < 1 || hidden < 1)
    fail("12_attention_classifier: --epochs {}, --batch-size {}, --embed {}, --hidden {} must all be at least 1",
         epochs, batch_size, embed, hidden);
  Generator gen(lesson.seed());

  lesson.section("1.简介 and 3.1 概览: attention in five steps");
  lesson.print(
      "1.简介: an attention model has three parts: the input, the weight computation, the output.\n"
      "3.1 概览 spells it out in five steps, which the model below follows in its forward():\n"
      "  1. 对输入进行嵌入            Embedding: word ids (B, T) -> vectors (B, T, D)\n"
      "  2. 将输入进行特征提取        keys = tanh(Linear(D, D)(embedded)): what each word offers to be scored by\n"
      "  3. 通过注意力权重矩阵计算    one learned query q: weights = masked_softmax(q·kᵀ/√D) (B, T),\n"
      "                               padding masked by the valid lengths\n"
      "  4. 拼接输出                  the values (the embedded words) summed with those weights: (B, D);\n"
      "                               one head has nothing to concatenate (several heads' outputs are\n"
      "                               joined here, as in lesson 09)\n"
      "  5. 使用输出进行预测或决策    Linear(D, F) -> relu -> Linear(F, 2): logits\n");

  lesson.section("3.2 模型实现: the notes' model, and why it cannot run");
  {
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
  }
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

  lesson.section("The data: sentences, a vocabulary, a DataLoader");
  data::LabeledText train = data::read_text_classification((lesson.data() / "sentiment" / "train.txt").string());
  data::LabeledText test = data::read_text_classification((lesson.data() / "sentiment" / "test.txt").string());
  data::Vocab vocab(train.tokens, /*min_freq=*/1, {"<pad>"});
  data::TokenArray train_array = data::build_array(train.tokens, vocab, num_steps);  // (N, T), (N)
  data::TokenArray test_array = data::build_array(test.tokens, vocab, num_steps);
  const int64_t n_train = train.labels.size(0), n_test = test.labels.size(0);
  lesson.print("{} training and {} held-out sentences, {} classes, vocabulary of {} tokens (with <unk>, <pad>)\n",
               n_train, n_test, train.num_classes, vocab.size());
  lesson.print("first sentence: \"{}\" (label {}) -> ids [{}], valid length {}\n", fmt::join(train.tokens[0], " "),
               train.labels.at({0}),
               fmt::join(train_array.array.data(), train_array.array.data() + num_steps, ", "),  // row 0
               train_array.valid_len.at({0}));
  Generator shuffle_gen(lesson.seed() + 1);  // the loader's own stream: its order does not shift the weights' draws
  data::DataLoader loader(data::TensorDataset(train_array.array, train_array.valid_len, train.labels),
                          {.batch_size = batch_size, .shuffle = true}, shuffle_gen);
  lesson.print("X {}, valid_len {}, labels {}; {} batches of {} per epoch, in a new order each epoch\n",
               train_array.array.shape(), train_array.valid_len.shape(), train.labels.shape(), loader.size(),
               batch_size);

  lesson.section("Training with AdamW and cross-entropy");
  AttentionClassifier model(vocab.size(), embed, hidden, train.num_classes, gen);
  lesson.print("{}\n", model.repr());
  optim::AdamW optimizer(model.parameters(), lr);
  lesson.print("AdamW lr {}, weight decay 0.01, {} epochs; loss = cross_entropy(logits, labels), the batch mean\n", lr,
               epochs);
  std::vector<double> losses, accuracies;
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
      right += correct(logits.detach(), y);
    }
    losses.push_back(loss_sum / static_cast<double>(n_train));
    accuracies.push_back(static_cast<double>(right) / static_cast<double>(n_train));
    progress.update(epoch + 1, {{"loss", losses.back()}, {"accuracy", accuracies.back()}});
  }
  progress.finish();
  std::vector<float> epoch_numbers;
  for (int64_t e = 1; e <= epochs; ++e) epoch_numbers.push_back(static_cast<float>(e));
  lesson.line_plot("training.svg",
                   {{"loss", epoch_numbers, std::vector<float>(losses.begin(), losses.end())},
                    {"accuracy", epoch_numbers, std::vector<float>(accuracies.begin(), accuracies.end())}},
                   {.title = "Training loss and accuracy per epoch", .xlabel = "epoch", .ylabel = ""});

  lesson.section("Held-out accuracy");
  model.eval();
  Tensor test_logits, test_weights;
  {
    NoGradGuard no_grad;
    test_logits = model(test_array.array, test_array.valid_len);  // (N, C)
    test_weights = model.weights();                               // (N, T)
  }
  const double test_accuracy = static_cast<double>(correct(test_logits, test.labels)) / static_cast<double>(n_test);
  lesson.print("accuracy on the {} held-out sentences: {:.3f}\n", n_test, test_accuracy);

  lesson.section("What the predictions attended to");
  std::vector<int64_t> predicted = argmax(test_logits, 1).to_vector();
  // A few held-out sentences: the first ones with a negation and the first without.
  std::vector<int64_t> shown;
  for (int64_t i = 0; i < n_test && shown.size() < 3; ++i)
    if (std::any_of(test.tokens[static_cast<size_t>(i)].begin(), test.tokens[static_cast<size_t>(i)].end(),
                    is_negation))
      shown.push_back(i);
  for (int64_t i = 0; i < n_test && shown.size() < 4; ++i)
    if (std::none_of(test.tokens[static_cast<size_t>(i)].begin(), test.tokens[static_cast<size_t>(i)].end(),
                     is_negation))
      shown.push_back(i);
  for (size_t k = 0; k < shown.size(); ++k) {
    const int64_t i = shown[k];
    const std::vector<std::string>& tokens = test.tokens[static_cast<size_t>(i)];
    const int64_t len = std::min<int64_t>(static_cast<int64_t>(tokens.size()), num_steps);
    Tensor row = slice(slice(test_weights, 0, i, i + 1), 1, 0, len);  // (1, len): the valid words' weights
    std::vector<std::string> labels(tokens.begin(), tokens.begin() + len);
    std::vector<std::string> pairs;
    for (int64_t t = 0; t < len; ++t)
      pairs.push_back(fmt::format("{} {:.2f}", labels[static_cast<size_t>(t)], row.at({0, t})));
    lesson.print("{}\n", fmt::join(pairs, "  "));
    lesson.heatmap(fmt::format("attention_sentence_{}.svg", k), row,
                   {.title = fmt::format("\"{}\": label {}, predicted {}", fmt::join(labels, " "), test.labels.at({i}),
                                         predicted[static_cast<size_t>(i)]),
                    .xlabel = "words",
                    .ylabel = "",
                    .row_labels = {"weight"},
                    .col_labels = labels,
                    .vmin = 0,
                    .vmax = 1});
  }

  lesson.section("Does it attend to the negation?");
  // Over the held-out sentences with a negation word: the weight on the negation word(s), per
  // negation word, against 1/length, the weight of a word if the attention were uniform.
  double share_sum = 0, uniform_sum = 0;
  int64_t negated = 0;
  for (int64_t i = 0; i < n_test; ++i) {
    const std::vector<std::string>& tokens = test.tokens[static_cast<size_t>(i)];
    const int64_t len = std::min<int64_t>(static_cast<int64_t>(tokens.size()), num_steps);
    double weight = 0;
    int64_t count = 0;
    for (int64_t t = 0; t < len; ++t)
      if (is_negation(tokens[static_cast<size_t>(t)])) {
        weight += test_weights.at({i, t});
        ++count;
      }
    if (count == 0) continue;
    share_sum += weight / static_cast<double>(count);
    uniform_sum += 1.0 / static_cast<double>(len);
    ++negated;
  }
  const double negation_share = negated > 0 ? share_sum / static_cast<double>(negated) : 0;
  const double uniform_share = negated > 0 ? uniform_sum / static_cast<double>(negated) : 0;
  lesson.print("{} held-out sentences hold a negation (not, never, nobody, …)\n", negated);
  lesson.print(
      "mean attention on the negation word: {:.3f}; a word's share under uniform attention: {:.3f} ({:.1f}×)\n",
      negation_share, uniform_share, uniform_share > 0 ? negation_share / uniform_share : 0.0);
  lesson.print(
      "The label of `the soup was not great` turns on the negation, and the one query learned to put it far\n"
      "above the filler words. The sentiment word often gets much less (see the weights above), and that is\n"
      "enough: the head's hidden layer reads it from the context vector even at a small weight.\n");

  lesson.result("losses", losses);
  lesson.result("train_accuracies", accuracies);
  lesson.result("test_accuracy", test_accuracy);
  lesson.result("negated_sentences", negated);
  lesson.result("negation_share", negation_share);
  lesson.result("uniform_share", uniform_share);
  lesson.result("test_weights", test_weights);

  return lesson.finish(fmt::format(
      "The notes' single-head attention classifier, made to run: Embedding -> features -> one learned query\n"
      "over the words (padding masked) -> weighted sum -> Linear-relu-Linear. Trained with AdamW for {} epochs,\n"
      "loss {:.4f} -> {:.4f}; held-out accuracy {:.3f}. On negated sentences the negation word gets {:.3f} of\n"
      "the attention, {:.1f}× a uniform share.",
      epochs, losses.front(), losses.back(), test_accuracy, negation_share,
      uniform_share > 0 ? negation_share / uniform_share : 0.0));
}

// Lesson 01 · attention cues and average pooling
//
// Walks through:
//   000 1.注意力                 why attention: look at what stands out, not at everything
//   003 注意力机制产生的原因      queries (自主性提示), keys (非自主性提示), values (感官输入)
//   001 注意力提示               the two kinds of cue
//   001 注意力汇聚, 1、平均汇聚   f(x) = (1/n) Σᵢ yᵢ, the "dumbest" estimator
//
// The learner sees d2l's attention cues computed over the same five objects on
// a desk: the weights of salience alone (非自主性提示: the red coffee cup stands
// out) against the weights of a query (自主性提示: "I want to read a book"),
// drawn as one heatmap; d2l's toy
// regression data (50 noisy training points of y = 2 sin(x) + x^0.8 + ε);
// 003's contrast of attention with a fully connected layer and max and
// average pooling, which read the inputs alone: three queries, and which of
// the four outputs change with them; average pooling's prediction, a flat
// line at the mean of the training y, drawn against the truth, and its test
// MSE: the number lessons 02 and 03 will beat.
//
// Run: build/release/lessons/01_average_pooling [--seed S] [--n-train N] [--out DIR]
#include <qkv/qkv.hpp>

#include "lesson.hpp"
#include "toy_data.hpp"

using namespace qkv;

namespace {

// 003 注意力机制产生的原因: with non-volitional cues alone, a fully connected layer, max pooling or
// average pooling can select among the inputs; "是否包含自主性提示" (whether there is a query) is what
// sets attention apart. Each of the four reads the n training values y (the sensory inputs) and gives
// one number; only attention also reads the query x:
//   fully connected  w·y + b             w (n) and b fixed once trained (here: initialised)
//   max pooling      max_i yᵢ            chosen by the inputs themselves: what stands out
//   average pooling  (1/n) Σ yᵢ
//   attention        Σᵢ softmax_i(-(x - xᵢ)²/2) yᵢ   the keys xᵢ matched against the query x
void contrast_with_pooling(lesson::Lesson& lesson, const lesson::ToyData& data, Generator& gen) {
  lesson.section("003 注意力机制产生的原因: attention against fully connected and pooling layers");
  const int64_t n = data.y_train.size(0);
  nn::Linear fc(n, 1, /*bias=*/true, gen);                                   // Linear(n, 1): n inputs -> 1 output
  const Tensor values = reshape(data.y_train, {1, n});                       // (1, n): the sensory inputs
  const Tensor queries = tensor({1.0f, 2.5f, 4.0f});                         // (3,): three volitional cues
  const Tensor keys = reshape(data.x_train, {1, n});                         // (1, n)
  Tensor diff = reshape(queries, {3, 1}) - keys;                             // (3, 1) - (1, n) -> (3, n)
  Tensor weights = (diff * diff * -0.5f).softmax(1);                         // (3, n): one row per query
  Tensor attention = reshape(weights.matmul(reshape(values, {n, 1})), {3});  // (3, n) x (n, 1) -> (3,)
  const float fc_out = fc(values).item(), max_out = max(values).item(), mean_out = mean(values).item();
  lesson.print("The same {} training values y, read by four layers, for three queries x:\n", n);
  lesson.print("{:>8} │ {:>15} {:>11} {:>15} {:>10}\n", "query x", "fully connected", "max pooling", "average pooling",
               "attention");
  for (int64_t i = 0; i < 3; ++i)
    lesson.print("{:>8.1f} │ {:>15.4f} {:>11.4f} {:>15.4f} {:>10.4f}\n", queries.at({i}), fc_out, max_out, mean_out,
                 attention.at({i}));
  const double attention_spread = max(attention).item() - min(attention).item();
  lesson.print(
      "Fully connected, max and average pooling give the same number whatever the query: they have no\n"
      "input for it. Their choice is fixed by parameters (w, b) or by the inputs (max picks what stands\n"
      "out, 非自主性提示). Attention's output moves by {:.4f} across the three queries: the query\n"
      "(自主性提示) chooses, through weights that match it against the keys xᵢ. (Lesson 02 is that kernel.)\n",
      attention_spread);
  lesson.result("contrast_queries", queries);
  lesson.result("contrast_fully_connected", static_cast<double>(fc_out));
  lesson.result("contrast_fc_weight", fc.weight);  // (1, n)
  lesson.result("contrast_fc_bias", fc.bias);      // (1)
  lesson.result("contrast_max_pooling", static_cast<double>(max_out));
  lesson.result("contrast_average_pooling", static_cast<double>(mean_out));
  lesson.result("contrast_attention", attention);
}

// d2l's attention cues (10.1, the coffee cup and the book), computed. Five
// objects on a desk, each a key of three features (how red, how much print,
// how much a bound volume):
//   non-volitional: no query; an object's score is how far it stands out from
//                   the others, ‖kᵢ - mean(k)‖², so the red cup draws the eye;
//   volitional:     the query q = "something printed and bound to read" scores
//                   each object by q·kᵢ, so the book wins.
// Each row of weights is a softmax over the same five objects.
void attention_cues(lesson::Lesson& lesson) {
  const std::vector<std::string> objects = {"newspaper", "research paper", "notebook", "book", "coffee cup"};
  const Tensor keys = tensor({0.1f, 1.0f, 0.0f,                      // newspaper: printed, not bound
                              0.1f, 1.0f, 0.3f,                      // research paper: printed, stapled
                              0.2f, 0.2f, 1.0f,                      // notebook: bound, little print
                              0.2f, 1.0f, 1.0f,                      // book: printed and bound
                              1.0f, 0.0f, 0.0f},                     // coffee cup: red
                             {5, 3});                                // (objects 5, features 3): red, print, bound
  const Tensor query = tensor({0.0f, 1.0f, 1.0f}, {3, 1});           // (features 3, 1): to read a book
  Tensor centred = keys - keys.mean(0, true);                        // (5, 3) - (1, 3)
  Tensor salience = sum(centred * centred, 1);                       // (5,): ‖kᵢ - mean(k)‖²
  Tensor relevance = keys.matmul(query).reshape({5});                // (5, 3) x (3, 1) -> (5,): q·kᵢ
  Tensor cues = stack({salience.softmax(0), relevance.softmax(0)});  // (2 kinds of cue, 5 objects)
  lesson.print("d2l's desk: five objects, each a key of three features (red, print, bound).\n");
  lesson.print("Without a query only salience chooses: its score is ‖kᵢ - mean(k)‖². With the query\n");
  lesson.print("q = ({:.1f}, {:.1f}, {:.1f}) (to read a book) the score is q·kᵢ. Each kind of score goes through\n",
               query.at({0, 0}), query.at({1, 0}), query.at({2, 0}));
  lesson.print("a softmax over the five objects:\n");
  lesson.print("{:<15} {:<24} {:>9} {:>7} │ {:>6} {:>7}\n", "object", "key (red, print, bound)", "salience", "weight",
               "q·k", "weight");
  for (int64_t i = 0; i < 5; ++i) {
    const std::string key = fmt::format("({:.1f}, {:.1f}, {:.1f})", keys.at({i, 0}), keys.at({i, 1}), keys.at({i, 2}));
    lesson.print("{:<15} {:<24} {:>9.3f} {:>7.3f} │ {:>6.3f} {:>7.3f}\n", objects[static_cast<size_t>(i)], key,
                 salience.at({i}), cues.at({0, i}), relevance.at({i}), cues.at({1, i}));
  }
  const auto top = [&](int64_t row) {  // the object with the largest weight in row `row`
    Tensor w = cues.slice(0, row, row + 1).reshape({5});
    size_t best = 0;
    for (size_t i = 1; i < objects.size(); ++i)
      if (w.at({static_cast<int64_t>(i)}) > w.at({static_cast<int64_t>(best)})) best = i;
    return objects[best];
  };
  lesson.print("The eye goes to the {} by itself; the query sends it to the {}.\n", top(0), top(1));
  lesson.heatmap("attention_cues.svg", cues,
                 {.title = "Attention cues over the same five objects: salience alone, then a query",
                  .xlabel = "objects on the desk (keys)",
                  .ylabel = "cue",
                  .row_labels = {"salience only", "query: a book"},
                  .col_labels = objects});
  lesson.result("cue_keys", keys);
  lesson.result("cue_query", query.reshape({3}));
  lesson.result("attention_cues", cues);
  lesson.result("cue_salient_object", top(0));
  lesson.result("cue_queried_object", top(1));
}

}  // namespace

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 1);
  int64_t n_train = 50;
  lesson.option("--n-train", n_train, "number of training points (keys and values)", {.min = 2, .max = 10'000});
  lesson.start();
  lesson.print(
      "This lesson shows what a query adds: attention cues with and without one over the same objects,\n"
      "four layers that read the same inputs (only attention reads a query), and average pooling, the\n"
      "estimator with no query at all, whose error lessons 02 and 03 will beat.\n");

  lesson.section("注意力 and 注意力提示: queries, keys and values");
  lesson.print(
      "The notes (000 1.注意力, 003, 001 注意力提示) describe attention as a choice among inputs.\n"
      "Non-volitional cues (非自主性提示) are the keys: what stands out in the input by itself.\n"
      "The volitional cue (自主性提示) is the query: what we are looking for.\n"
      "Each key is paired with a value (感官输入), and attention pooling (注意力汇聚) mixes the\n"
      "values with weights that say how well each key matches the query.\n"
      "Without a query there is only pooling: every value gets the same weight. That is this lesson.\n");
  attention_cues(lesson);

  lesson.section("The data: y = 2 sin(x) + x^0.8 + ε");
  Generator gen(lesson.seed());
  lesson::ToyData data = lesson::toy_data(n_train, gen);  // lessons/support/toy_data.cpp
  lesson.print("training x ~ U[0, 5), sorted:  x_train {}  (the keys)\n", data.x_train.shape());
  lesson.print("training y = f(x) + ε, ε ~ N(0, 0.5²):  y_train {}  (the values)\n", data.y_train.shape());
  lesson.print("test x = 0, 0.1, …, 4.9:  x_test {}  (the queries)\n", data.x_test.shape());
  lesson.print("first five training points:\n  x {}\n  y {}\n", slice(data.x_train, 0, 0, 5),
               slice(data.y_train, 0, 0, 5));

  contrast_with_pooling(lesson, data, gen);

  lesson.section("1、平均汇聚: f(x) = (1/n) Σᵢ yᵢ");
  Tensor y_mean = data.y_train.mean();                  // (n,) -> ()
  Tensor y_hat = y_mean.expand({data.x_test.size(0)});  // () -> (50,): the same answer for every query
  lesson.print("mean of the training y: {:.4f}\n", y_mean.item());
  lesson.print("prediction y_hat {}: every entry {:.4f}, whatever the query x is\n", y_hat.shape(), y_mean.item());

  // d2l plots the prediction against the noiseless truth f(x), so the MSE here is
  // measured against f(x_test), not against noisy test labels.
  Tensor mse = mse_loss(y_hat, data.y_truth);  // (50,) x (50,) -> ()
  lesson.print("test MSE against the noiseless truth f(x_test): {:.4f}\n", mse.item());
  lesson.line_plot("prediction.svg",
                   {{"truth f(x)", data.x_test.to_vector(), data.y_truth.to_vector()},
                    {"average pooling", data.x_test.to_vector(), y_hat.to_vector()},
                    {"training points", data.x_train.to_vector(), data.y_train.to_vector(), /*points=*/true}},
                   {.title = "Average pooling: the prediction against the truth", .xlabel = "x", .ylabel = "y"});

  lesson.result("n_train", n_train);
  lesson.result("test_mse", static_cast<double>(mse.item()));
  lesson.result("prediction", y_hat);
  lesson.result("x_train", data.x_train);
  lesson.result("y_train", data.y_train);

  lesson.print(
      "\nWhat to remember: keys are what stands out by itself, the query is what we look for, and attention\n"
      "weighs the values by how well their keys match the query. Average pooling ignores the query.\n");
  return lesson.finish(
      fmt::format("Average pooling predicts the mean {:.4f} of the training y for every x, a flat line far from\n"
                  "the curve f(x) (test MSE {:.4f} against f). Lesson 02 lets the query choose.",
                  y_mean.item(), mse.item()));
}

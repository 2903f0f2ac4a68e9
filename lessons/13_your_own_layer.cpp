// Lesson 13 · writing your own layer
//
// Walks through:
//   qkv's own chapter: how a reader extends the framework (the README's
//   "Adding an op", done end to end on an op qkv does not have)
//
// The learner writes swish(x) = x·sigmoid(x) (Ramachandran et al. 2017; PyTorch's
// SiLU) as a qkv op: its forward and its hand-derived backward side by side;
// checks the backward against finite differences with qkv::gradcheck, and
// sees the same check catch a plausible wrong backward (one that forgets the
// product rule), with the element and the two numbers it disagrees on; then
// uses the op inside an nn::Module written here, a small MLP, and trains it
// with Adam on two interleaved half-moons drawn from the seeded Generator:
// the loss falls, the training and held-out accuracy are printed, the
// decision surface is drawn.
//
// Letters: N points, 2 input features, W hidden units, C = 2 classes.
//
// Run: build/release/lessons/13_your_own_layer [--seed S] [--steps N] [--hidden W] [--n-train N] [--lr LR]
//      [--out DIR]
#include <qkv/qkv.hpp>

#include <cmath>
#include <numbers>

#include "lesson.hpp"

using namespace qkv;

// --- the op --------------------------------------------------------------------------
// swish(x) = x·σ(x), σ(x) = 1/(1 + e⁻ˣ)
// By the product rule, with σ'(x) = σ(x)(1 − σ(x)):
//   d swish/dx = σ(x) + x·σ(x)(1 − σ(x)) = σ(x)·(1 + x·(1 − σ(x)))
// Smooth everywhere (unlike relu's kink at 0), slightly negative for x < 0
// (its minimum is about −0.278 at x ≈ −1.278), and ≈ x for large x.
//   x (any shape) -> (same shape)
Tensor swish(const Tensor& x) {
  Tensor s = sigmoid(x.detach());
  Tensor out = x.detach() * s;  // forward, without recording
  // The backward reads x: it is saved (record() keeps it and checks, before the
  // backward runs, that nothing wrote into it since), and comes back as saved[0].
  record(out, "SwishBackward", /*inputs=*/{x}, /*saved=*/{x},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           Tensor sx = sigmoid(saved[0]);  // recomputed: cheaper to keep than one more saved tensor
           return {dout * (sx * (1.0f + saved[0] * (1.0f - sx)))};  // dx = dout · σ(x)(1 + x(1 − σ(x)))
         });
  return out;
}

// The same forward with a wrong backward: it treats σ(x) as a constant and
// forgets the product rule, dx = dout·σ(x). Close to right for x ≪ 0 and
// x ≫ 0, wrong near 0 (at x = 1 by about 0.20 of 0.93).
Tensor swish_wrong_backward(const Tensor& x) {
  Tensor out = x.detach() * sigmoid(x.detach());
  record(out, "SwishWrongBackward", /*inputs=*/{x}, /*saved=*/{x},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           return {dout * sigmoid(saved[0])};  // missing + x·σ(x)(1 − σ(x))
         });
  return out;
}

// --- the layer -------------------------------------------------------------------------
// A small classifier written as a user writes one: the submodules registered
// once in the constructor, forward calling the new op between them. (A
// parameter of its own would be a Tensor member bound to its name the same
// way: register_parameter("scale", scale, ones({1})).)
//   x (N, 2) -> Linear(2, W) -> swish -> Linear(W, W) -> swish -> Linear(W, C) -> logits (N, C)
class SwishMLP : public nn::Module {
 public:
  SwishMLP(int64_t hidden, int64_t classes, Generator& gen) {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(2, hidden, true, gen));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(hidden, hidden, true, gen));
    out = register_module("out", std::make_shared<nn::Linear>(hidden, classes, true, gen));
  }
  Tensor forward(const Tensor& x) {
    nn::TraceScope trace(*this, {x});  // shows this layer, with its own shapes, in nn::trace's picture
    Tensor h = swish((*fc1)(x));       // (N, 2) -> (N, W)
    h = swish((*fc2)(h));              // (N, W) -> (N, W)
    return trace.output((*out)(h));    // (N, W) -> (N, C)
  }
  Tensor operator()(const Tensor& x) { return forward(x); }
  std::string type_name() const override { return "SwishMLP"; }
  std::shared_ptr<nn::Linear> fc1, fc2, out;
};

// --- the data --------------------------------------------------------------------------
// Two interleaved half-moons (scikit-learn's make_moons): class 0 on the upper
// arc (cos t, sin t), class 1 on the lower arc (1 − cos t, 0.5 − sin t),
// t ~ U[0, π), plus N(0, noise²) on each coordinate. No straight line splits them.
struct Moons {
  Tensor x;     // (N, 2)
  IntTensor y;  // (N), 0 or 1
};
Moons make_moons(int64_t n, float noise, Generator& gen) {
  std::vector<float> xs;
  std::vector<int64_t> ys;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = i % 2;
    const float t = gen.uniform(0, std::numbers::pi_v<float>);
    float a = label == 0 ? std::cos(t) : 1 - std::cos(t);
    float b = label == 0 ? std::sin(t) : 0.5f - std::sin(t);
    xs.push_back(a + gen.normal(0, noise));
    xs.push_back(b + gen.normal(0, noise));
    ys.push_back(label);
  }
  return {tensor(xs, {n, 2}), int_tensor(ys)};
}

// The share of rows of logits (N, C) whose largest entry is at the label.
double accuracy(const Tensor& logits, const IntTensor& labels) {
  IntTensor predicted = argmax(logits, 1);  // (N, C) -> (N)
  std::vector<int64_t> p = predicted.to_vector(), y = labels.to_vector();
  int64_t right = 0;
  for (size_t i = 0; i < p.size(); ++i) right += p[i] == y[i];
  return static_cast<double>(right) / static_cast<double>(p.size());
}

// --- the lesson's sections ------------------------------------------------------------

// What the first section computes: swish and its derivative on a few points,
// and how far both are from x * sigmoid(x) built from existing ops.
struct OpShown {
  Tensor x, swish, derivative;  // (9) each
  double forward_diff = 0, backward_diff = 0;
};

OpShown show_the_op(lesson::Lesson& lesson) {
  lesson.section("A new op: swish(x) = x·sigmoid(x), forward and backward side by side");
  lesson.print(
      "An op computes its output without recording (on x.detach()), then record() attaches the\n"
      "backward and saves the tensors it reads (here x). Given them back and dL/d(out), the backward\n"
      "returns dL/dx, one gradient per input, each of its input's shape.\n"
      "  forward   swish(x)    = x·σ(x)\n"
      "  backward  dswish/dx   = σ(x) + x·σ(x)(1 − σ(x)) = σ(x)·(1 + x(1 − σ(x)))     (product rule)\n"
      "The code is swish() at the top of lessons/13_your_own_layer.cpp.\n");
  OpShown shown;
  shown.x = tensor({-4, -2, -1.278f, -0.5f, 0, 0.5f, 1, 2, 4});
  Tensor x_leaf = shown.x.detach().requires_grad_();
  Tensor y = swish(x_leaf);
  y.sum().backward();  // dL/dy = 1, so x.grad() is the derivative itself
  shown.swish = y.detach();
  shown.derivative = x_leaf.grad();
  lesson.print("x          {}\nswish(x)   {}\nderivative {}\n", shown.x, shown.swish, shown.derivative);
  lesson.print("y.grad_fn = <{}>: the name given to record()\n", y.grad_fn()->name);
  // The same function from existing ops, which autograd differentiates on its own: the new op must agree.
  Tensor x_ref = shown.x.detach().requires_grad_();
  Tensor y_ref = x_ref * sigmoid(x_ref);
  y_ref.sum().backward();
  shown.forward_diff = max(abs(shown.swish - y_ref.detach())).item();
  shown.backward_diff = max(abs(shown.derivative - x_ref.grad())).item();
  lesson.print(
      "against x * sigmoid(x) built from existing ops: largest difference {:.1e} (forward), {:.1e} (backward)\n",
      shown.forward_diff, shown.backward_diff);
  lesson.print("Why write it as one op then? One node instead of two in the graph, and no saved σ(x) tensor.\n");
  Tensor grid = arange(-6.0f, 6.01f, 0.25f);  // (49)
  Tensor grid_leaf = grid.detach().requires_grad_();
  Tensor curve = swish(grid_leaf);
  curve.sum().backward();
  lesson.line_plot("swish.svg",
                   {{"swish(x)", grid.to_vector(), curve.detach().to_vector()},
                    {"d swish/dx (the backward)", grid.to_vector(), grid_leaf.grad().to_vector()},
                    {"relu(x)", grid.to_vector(), relu(grid).to_vector()}},
                   {.title = "swish and the derivative its backward computes", .xlabel = "x", .ylabel = "y"});
  return shown;
}

// What gradcheck said of the right and the wrong backward, and where the wrong one is furthest off.
struct Checked {
  Tensor inputs;  // (4, 5)
  GradcheckResult right, wrong;
  double worst_error = 0, worst_x = 0;
};

Checked check_the_backward(lesson::Lesson& lesson, Generator& gen) {
  lesson.section("Checking the backward: qkv::gradcheck");
  lesson.print(
      "gradcheck reduces the op's output to L = Σ w ⊙ swish(x) with fixed random w, and compares the\n"
      "backward's dL/dxᵢ with (L(xᵢ + eps) − L(xᵢ − eps)) / (2 eps) for every element.\n");
  Checked c;
  c.inputs = randn({4, 5}, gen);  // (4, 5), N(0, 1): around 0, where swish bends
  c.right = gradcheck([](const std::vector<Tensor>& in) { return swish(in[0]); }, {c.inputs});
  lesson.print("gradcheck(swish) on a (4, 5) input: {}\n", c.right.ok ? "passed" : "FAILED: " + c.right.message);
  c.wrong = gradcheck([](const std::vector<Tensor>& in) { return swish_wrong_backward(in[0]); }, {c.inputs});
  lesson.print("gradcheck(swish with dx = dout·σ(x), the product rule forgotten): {}\n",
               c.wrong.ok ? "passed (it should not have)" : "failed");
  lesson.print("what the failed check says (the first element out of tolerance, and the two numbers):\n  {}\n",
               c.wrong.message);
  // The whole picture: both backwards on the same input with dL/d(out) = 1, element by element.
  Tensor in_right = c.inputs.detach().requires_grad_(), in_wrong = c.inputs.detach().requires_grad_();
  swish(in_right).sum().backward();
  swish_wrong_backward(in_wrong).sum().backward();
  Tensor error = abs(in_wrong.grad() - in_right.grad());  // (4, 5): |x·σ(x)(1 − σ(x))|, the forgotten term
  const int64_t worst = argmax(error).item();
  c.worst_error = error.to_vector()[static_cast<size_t>(worst)];
  c.worst_x = c.inputs.to_vector()[static_cast<size_t>(worst)];
  lesson.print("largest error of the wrong backward: {:.4f} at element {} (row {}, column {}), where x = {:.4f}\n",
               c.worst_error, worst, worst / c.inputs.size(1), worst % c.inputs.size(1), c.worst_x);
  lesson.print("(the forgotten term x·σ(x)(1 − σ(x)) is largest in size, 0.224, at x = ±1.54)\n");
  lesson.print(
      "The forward is the same in both, so only gradcheck (or a model that mysteriously trains badly)\n"
      "can tell them apart: check every backward before using the op.\n");
  return c;
}

// Adam on the whole training set, `steps` times; the loss of each step.
std::vector<double> train(lesson::Lesson& lesson, SwishMLP& model, const Moons& data, int64_t steps, float lr) {
  lesson.section("Training with Adam");
  optim::Adam adam(model.parameters(), lr);
  lesson.print("Adam, lr {}, {} steps on the whole training set, loss = cross_entropy(logits, labels)\n", lr, steps);
  std::vector<double> losses;
  std::vector<float> step_numbers, loss_numbers;
  lesson::Progress progress = lesson.progress("step", steps);
  for (int64_t step = 0; step < steps; ++step) {
    adam.zero_grad();
    Tensor logits = model(data.x);                // (N, 2)
    Tensor loss = cross_entropy(logits, data.y);  // (N, 2) x (N) -> ()
    lesson::check_finite_loss(loss.item(), "step", step + 1);
    loss.backward();
    adam.step();
    losses.push_back(loss.item());
    step_numbers.push_back(static_cast<float>(step + 1));
    loss_numbers.push_back(loss.item());
    if ((step + 1) % 25 == 0 || step + 1 == steps)
      progress.update(step + 1, {{"loss", loss.item()}, {"accuracy", accuracy(logits.detach(), data.y)}});
  }
  progress.finish();
  lesson.line_plot("loss.svg", {{"training loss", step_numbers, loss_numbers}},
                   {.title = "SwishMLP on two moons: cross-entropy per step", .xlabel = "step", .ylabel = "loss"});
  return losses;
}

// P(class 1) on a 21 × 41 grid over [-1.5, 2.5] × [-1, 1.5] (row = y, top first; column = x), drawn.
void draw_decision_surface(lesson::Lesson& lesson, SwishMLP& model) {
  NoGradGuard no_grad;
  const int64_t rows = 21, cols = 41;  // steps of 0.125 in y, 0.1 in x
  std::vector<std::string> row_labels, col_labels;
  for (int64_t r = 0; r < rows; ++r)  // an axis label every 0.5
    row_labels.push_back(r % 4 == 0 ? fmt::format("{:.1f}", 1.5 - 0.125 * static_cast<double>(r)) : "");
  for (int64_t c = 0; c < cols; ++c)
    col_labels.push_back(c % 5 == 0 ? fmt::format("{:.1f}", -1.5 + 0.1 * static_cast<double>(c)) : "");
  std::vector<float> points;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      points.push_back(-1.5f + 4.0f * static_cast<float>(c) / static_cast<float>(cols - 1));
      points.push_back(1.5f - 2.5f * static_cast<float>(r) / static_cast<float>(rows - 1));
    }
  Tensor probs = softmax(model(tensor(points, {rows * cols, 2})), 1);  // (rows·cols, 2)
  Tensor surface = slice(probs, 1, 1, 2).reshape({rows, cols});        // (rows, cols): P(class 1)
  lesson.heatmap("decision_surface.svg", surface,
                 {.title = "P(lower moon) over the plane",
                  .xlabel = "x",
                  .ylabel = "y",
                  .row_labels = row_labels,
                  .col_labels = col_labels,
                  .vmin = 0,
                  .vmax = 1});
}

// The held-out points, one series per moon.
void draw_moons(lesson::Lesson& lesson, const Moons& data) {
  std::vector<float> x0, y0, x1, y1;
  std::vector<float> px = data.x.to_vector();
  std::vector<int64_t> py = data.y.to_vector();
  for (size_t i = 0; i < py.size(); ++i) {
    (py[i] == 0 ? x0 : x1).push_back(px[2 * i]);
    (py[i] == 0 ? y0 : y1).push_back(px[2 * i + 1]);
  }
  lesson.line_plot("moons.svg", {{"upper moon (class 0)", x0, y0, true}, {"lower moon (class 1)", x1, y1, true}},
                   {.title = "The held-out half-moons", .xlabel = "x", .ylabel = "y"});
}

// What the lesson will show, printed before its first section.
void what_you_will_see(lesson::Lesson& lesson) {
  lesson.print(
      "What this lesson shows: a new op, swish(x) = x·sigmoid(x), written as qkv writes its ops, forward\n"
      "and backward side by side; gradcheck passing it and catching a backward that forgets the product\n"
      "rule; the op inside a layer of your own, drawn in the model picture like the library's layers; and\n"
      "that layer trained on two half-moons, with its decision surface drawn.\n");
}

// What to keep from it, printed before the summary.
void what_to_remember(lesson::Lesson& lesson) {
  lesson.print(
      "\nWhat to remember: an op is one function: compute the output without recording, then record() its\n"
      "backward beside it, reading only what it saved. gradcheck compares that backward with finite\n"
      "differences and names the element where they disagree. A layer is a Module that registers its\n"
      "parts and calls ops in its forward; a TraceScope in that forward puts it in the model picture.\n");
}

// The numbers the lesson claims, into results.json.
void save_results(lesson::Lesson& lesson, const OpShown& shown, const Checked& checked,
                  const std::vector<double>& losses, double train_accuracy, double test_accuracy) {
  lesson.result("forward_max_diff", shown.forward_diff);
  lesson.result("backward_max_diff", shown.backward_diff);
  lesson.result("gradcheck_ok", checked.right.ok);
  lesson.result("gradcheck_message", checked.right.message);
  lesson.result("gradcheck_wrong_ok", checked.wrong.ok);
  lesson.result("gradcheck_wrong_message", checked.wrong.message);
  lesson.result("wrong_backward_max_error", checked.worst_error);
  lesson.result("wrong_backward_max_error_x", checked.worst_x);
  lesson.result("gradcheck_input", checked.inputs);
  lesson.result("x", shown.x);
  lesson.result("swish", shown.swish);
  lesson.result("derivative", shown.derivative);
  lesson.result("losses", losses);
  lesson.result("train_accuracy", train_accuracy);
  lesson.result("test_accuracy", test_accuracy);
}

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 13);
  int64_t steps = 300, hidden = 16, n_train = 200;
  float lr = 0.02f;
  lesson.option("--steps", steps, "Adam steps, each on the whole training set", {.max = 100'000});
  lesson.option("--hidden", hidden, "hidden units of each layer", {.max = 4096});
  lesson.option("--n-train", n_train, "training points (as many held-out points are drawn)",
                {.min = 2, .max = 100'000});
  lesson.option("--lr", lr, "Adam learning rate");
  lesson.start();
  if (steps < 1 || hidden < 1 || n_train < 2)
    fail("13_your_own_layer: --steps {}, --hidden {} and --n-train {} must be at least 1, 1 and 2", steps, hidden,
         n_train);
  what_you_will_see(lesson);
  Generator gen(lesson.seed());

  const OpShown shown = show_the_op(lesson);
  const Checked checked = check_the_backward(lesson, gen);

  lesson.section("The op inside a layer: SwishMLP");
  Moons train_set = make_moons(n_train, 0.15f, gen);
  Moons test_set = make_moons(n_train, 0.15f, gen);
  lesson.print("two half-moons: train x {}, y {}; held-out x {}, y {}\n", train_set.x.shape(), train_set.y.shape(),
               test_set.x.shape(), test_set.y.shape());
  SwishMLP model(hidden, 2, gen);
  lesson.print("{}\n", model.repr());
  lesson.draw_model("model.svg", model, [&] { model.forward(train_set.x); },
                    {.title = "Your own layer, SwishMLP, drawn from one call on the training points"});

  const std::vector<double> losses = train(lesson, model, train_set, steps, lr);
  double train_accuracy = 0, test_accuracy = 0;
  {
    NoGradGuard no_grad;
    train_accuracy = accuracy(model(train_set.x), train_set.y);
    test_accuracy = accuracy(model(test_set.x), test_set.y);
  }
  lesson.print("loss {:.4f} -> {:.4f}; accuracy: training {:.3f}, held-out {:.3f}\n", losses.front(), losses.back(),
               train_accuracy, test_accuracy);
  draw_decision_surface(lesson, model);
  draw_moons(lesson, test_set);

  save_results(lesson, shown, checked, losses, train_accuracy, test_accuracy);

  what_to_remember(lesson);
  return lesson.finish(fmt::format(
      "swish written as one op with its hand-derived backward; gradcheck passed it and caught the backward\n"
      "that forgot the product rule. Inside SwishMLP, trained with Adam for {} steps, the loss fell from\n"
      "{:.4f} to {:.4f}; accuracy on the two moons: {:.3f} training, {:.3f} held-out.",
      steps, losses.front(), losses.back(), train_accuracy, test_accuracy));
}

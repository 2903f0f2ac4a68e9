// Writes in place after the forward (autograd.hpp, "Writes in place"): each
// way a program can write into a tensor a backward function saved makes
// backward() refuse the graph, naming the op and the versions, where it gave
// wrong gradients before; and what writes nothing saved, or comes before the
// op that saves it, goes through as in PyTorch.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include <unistd.h>
#include <filesystem>
#include <functional>

#include <string>
#include <utility>
#include <vector>

using namespace qkv;

namespace {

// PyTorch's words, which the message starts with after "backward: ".
constexpr const char* kModified =
    "backward: one of the variables needed for gradient computation has been modified by an inplace operation";

std::string backward_error(const Tensor& loss) {
  try {
    loss.backward();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("core/version: a non-const data() is a write; reading is not") {
  Tensor x = tensor({1, 2, 3});
  const Version& v = x.impl()->storage->version;
  CHECK(v.get() == 0);
  (void)std::as_const(x).data();
  (void)x.at({0});
  (void)x.to_vector();
  CHECK(v.get() == 0);
  x.data()[0] = 5;
  CHECK(v.get() == 1);
  // Views and detach() share the storage, and so the count.
  Tensor view = x.reshape({3, 1}), detached = x.detach();
  view.data()[1] = 6;
  detached.data()[2] = 7;
  CHECK(v.get() == 3);
  // A clone has a storage, and a count, of its own.
  Tensor copy = x.clone();
  copy.data()[0] = 0;
  CHECK(v.get() == 3);
  IntTensor ids = int_tensor({1, 2});
  CHECK(ids.storage()->version.get() == 0);
  ids.data()[0] = 0;
  CHECK(ids.storage()->version.get() == 1);
}

TEST_CASE("core/version: a write through data() into a saved input") {
  // mul saves both operands: dy/da = b. Writing b after the forward would
  // give a.grad() = the new b, not the b that made y.
  Tensor a = tensor({1, 2}).requires_grad_(), b = tensor({3, 4});
  Tensor loss = sum(mul(a, b));
  b.data()[0] = 30;
  const std::string error = backward_error(loss);
  CHECK(error.rfind(kModified, 0) == 0);
  CHECK(error.find("MulBackward saved its input 1 of shape (2) at version 0, and it is now at version 1") !=
        std::string::npos);
  CHECK_FALSE(a.grad().defined());  // refused before any gradient reached a leaf
}

TEST_CASE("core/version: a write into a saved output, through a view or detach()") {
  // exp saves its output: d(eˣ)/dx = eˣ.
  Tensor x = tensor({0, 1}).requires_grad_();
  SUBCASE("detach") {
    Tensor y = exp(x);
    y.detach().data()[1] = 0;
    // exp's own write into its fresh output came first: version 1 when saved.
    CHECK(backward_error(sum(y)).find("ExpBackward saved its output of shape (2) at version 1, and it is now at "
                                      "version 2") != std::string::npos);
  }
  SUBCASE("a view of it") {
    Tensor y = exp(x);
    Tensor loss = sum(y);
    y.reshape({2, 1}).detach().data()[0] = 0;
    CHECK(backward_error(loss).find("ExpBackward saved its output") != std::string::npos);
  }
  SUBCASE("a view of a saved input") {
    Tensor w = tensor({1, 2, 3, 4}, {2, 2}).requires_grad_();
    Tensor loss = sum(matmul(x.reshape({1, 2}), w));  // matmul saves both
    Tensor w_view = w.detach().reshape({4});
    w_view.data()[3] = 0;
    CHECK(backward_error(loss).find("MatmulBackward saved its input 1 of shape (2, 2)") != std::string::npos);
  }
}

TEST_CASE("core/version: a write into a saved IntTensor mask") {
  Tensor x = tensor({1, 2, 3}).requires_grad_();
  IntTensor mask = int_tensor({1, 0, 0});
  Tensor loss = sum(masked_fill(x, mask, 0.0f));
  mask.data()[1] = 1;  // backward would now block the gradient of x[1] as well
  CHECK(backward_error(loss).find("MaskedFillBackward saved a tensor of shape (3) at version 0, and it is now at "
                                  "version 1") != std::string::npos);
}

TEST_CASE("core/version: an optimizer step between forward and backward") {
  // The second step's loss was computed with the weights before the first
  // step; backward would differentiate it at the weights after.
  Generator gen(0);
  nn::Linear layer(3, 2, true, gen);
  Tensor x = randn({4, 3}, gen);
  auto refused_after_step = [&](optim::Optimizer& opt) {
    sum(layer(x)).backward();
    const uint64_t before = layer.weight.impl()->storage->version.get();
    Tensor loss = sum(layer(x));  // saves x and the weight
    opt.step();                   // writes the weight: the version moves on
    const std::string error = backward_error(loss);
    CHECK(error.rfind(kModified, 0) == 0);
    CHECK(error.find(fmt::format("LinearBackward saved its input 1 of shape (2, 3) at version {}, and it is now at "
                                 "version {}",
                                 before, before + 1)) != std::string::npos);
    // The right order goes through.
    opt.zero_grad();
    Tensor again = sum(layer(x));
    again.backward();
    opt.step();
    opt.zero_grad();
  };
  SUBCASE("SGD") {
    optim::SGD opt(layer.parameters(), 0.1f);
    refused_after_step(opt);
  }
  SUBCASE("SGD with momentum") {
    optim::SGD opt(layer.parameters(), 0.1f, 0.9f);
    refused_after_step(opt);
  }
  SUBCASE("Adam") {
    optim::Adam opt(layer.parameters());
    refused_after_step(opt);
  }
  SUBCASE("AdamW") {
    optim::AdamW opt(layer.parameters());
    refused_after_step(opt);
  }
}

TEST_CASE("core/version: an initialiser, load_state_dict or load_checkpoint between forward and backward") {
  Generator gen(0);
  nn::Linear layer(2, 2, false, gen);
  Tensor x = randn({1, 2}, gen);
  auto refused_after = [&](const std::function<void()>& write) {
    Tensor loss = sum(layer(x));
    write();
    CHECK(backward_error(loss).find("LinearBackward saved its input 1") != std::string::npos);
  };
  SUBCASE("every initialiser") {
    refused_after([&] { nn::init::zeros_(layer.weight); });
    refused_after([&] { nn::init::ones_(layer.weight); });
    refused_after([&] { nn::init::constant_(layer.weight, 0.5f); });
    refused_after([&] { nn::init::uniform_(layer.weight, -1, 1, gen); });
    refused_after([&] { nn::init::normal_(layer.weight, 0, 1, gen); });
    refused_after([&] { nn::init::xavier_uniform_(layer.weight, 1, gen); });
    refused_after([&] { nn::init::xavier_normal_(layer.weight, 1, gen); });
    refused_after([&] { nn::init::kaiming_uniform_(layer.weight, 0, gen); });
  }
  SUBCASE("load_state_dict") {
    refused_after([&] { layer.load_state_dict({{"weight", ones({2, 2})}}); });
  }
  SUBCASE("load_checkpoint") {
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() / fmt::format("qkv_version_{}.safetensors", getpid());
    io::save_checkpoint(path, layer);
    refused_after([&] { io::load_checkpoint(path, layer); });
    std::filesystem::remove(path);
  }
}

TEST_CASE("core/version: a write into a graph kept with retain_graph") {
  Tensor x = tensor({1, 2}).requires_grad_();
  Tensor y = tanh(x);
  Tensor loss = sum(y);
  loss.backward(Tensor(), /*retain_graph=*/true);
  y.detach().data()[0] = 0;
  CHECK(backward_error(loss).find("TanhBackward saved its output") != std::string::npos);
}

TEST_CASE("core/version: what no backward reads may be written, as in PyTorch") {
  Tensor a = tensor({1, 2}).requires_grad_(), b = tensor({3, 4});
  SUBCASE("an input of add, which saves neither") {
    Tensor loss = sum(add(a, b));
    b.data()[0] = 0;
    loss.backward();
    CHECK(a.grad().to_vector() == std::vector<float>{1, 1});
  }
  SUBCASE("a write before the op that saves it") {
    b.data()[0] = 30;
    Tensor loss = sum(mul(a, b));
    loss.backward();
    CHECK(a.grad().to_vector() == std::vector<float>{30, 4});
  }
  SUBCASE("reading between forward and backward") {
    Tensor y = exp(a);
    Tensor loss = sum(y);
    const Tensor& seen = y;
    const float total = seen.data()[0] + y.at({1}) + y.to_vector()[0];
    loss.backward();
    CHECK(total > 0);
    CHECK(a.grad().defined());
  }
  SUBCASE("clip_grad_norm_ between forward and backward: it writes gradients, which no backward saved") {
    // d/da Σ a·b = b, accumulated onto the clipped first gradient.
    sum(mul(a, b)).backward();  // a.grad() = (3, 4), norm 5
    Tensor loss = sum(mul(a, b));
    CHECK(optim::clip_grad_norm_({a}, 1.0f) == doctest::Approx(5.0f));  // a.grad() = (0.6, 0.8)
    loss.backward();
    const std::vector<float> g = a.grad().to_vector();
    CHECK(g[0] == doctest::Approx(3.6));
    CHECK(g[1] == doctest::Approx(4.8));
  }
}

TEST_CASE("core/version: an op writes its fresh output before record(), and that is not a write after") {
  // A custom op in the style of the README's: it fills out, then records
  // out as saved; its own writes are part of the version record() notes.
  Tensor x = tensor({1, 2, 3}).requires_grad_();
  auto square = [](const Tensor& in) {
    Tensor out = Tensor::empty(in.shape());
    for (int64_t i = 0; i < in.numel(); ++i) out.data()[i] = in.at({i}) * in.at({i});
    record(out, "SquareBackward", {in}, /*saved=*/{in},
           [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
             return {mul(dout, mul(saved[0], 2.0f))};
           });
    return out;
  };
  Tensor y = square(x);
  sum(y).backward();
  CHECK(x.grad().to_vector() == std::vector<float>{2, 4, 6});
  // A write after record() is one.
  Tensor z = square(x);
  Tensor loss = sum(z);
  x.detach().data()[0] = 0;
  CHECK(backward_error(loss).find("SquareBackward saved its input 0") != std::string::npos);
}

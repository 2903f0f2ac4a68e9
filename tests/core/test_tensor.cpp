// Tensor, IntTensor, Shape, Generator, factories and printing.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include <cmath>

using namespace qkv;

TEST_CASE("core/shape") {
  CHECK(Shape{2, 3}.str() == "(2, 3)");
  CHECK(Shape{5}.str() == "(5)");
  CHECK(Shape{}.str() == "()");
  CHECK(Shape{2, 3, 4}.numel() == 24);
  CHECK(Shape{}.numel() == 1);
  CHECK(fmt::format("{}", Shape{1, 7}) == "(1, 7)");
  CHECK(normalize_dim(-1, 3, "op") == 2);
  CHECK(normalize_dim(0, 0, "op") == 0);  // a 0-d tensor accepts dim 0 / -1
  CHECK_THROWS_WITH_AS(normalize_dim(3, 3, "softmax"),
                       doctest::Contains("softmax: dim 3 out of range for a 3-d tensor"), Error);
  CHECK_THROWS_WITH_AS(normalize_dim(-4, 3, "sum"), doctest::Contains("sum: dim -4 out of range"), Error);
}

TEST_CASE("core/shape: sizes inside the Shape and on the heap behave alike") {
  // Up to six sizes are stored in the Shape itself, more on the heap: every
  // operation must give the same answers on both sides of that line.
  for (int64_t n : {0, 1, 5, 6, 7, 12}) {
    CAPTURE(n);
    std::vector<int64_t> sizes;
    for (int64_t i = 0; i < n; ++i) sizes.push_back(i % 3 + 1);  // 1, 2, 3, 1, 2, …
    const Shape s(sizes);
    CHECK(s.ndim() == n);
    CHECK(s.dims() == sizes);
    CHECK(std::vector<int64_t>(s.begin(), s.end()) == sizes);
    int64_t product = 1;
    for (int64_t d : sizes) product *= d;
    CHECK(s.numel() == product);

    Shape copy = s;  // a copy is equal and independent
    CHECK(copy == s);
    if (n > 0) {
      copy[n - 1] = 9;
      CHECK(copy != s);
      CHECK(s[n - 1] == sizes.back());
    }
    Shape moved = std::move(copy);
    CHECK(moved.ndim() == n);
    CHECK((n == 0 || moved[n - 1] == 9));

    std::vector<int64_t> longer = sizes;  // a prefix is not equal to the longer shape
    longer.push_back(1);
    CHECK(Shape(longer) != s);
  }
  CHECK(Shape{1, 1, 1, 1, 1, 1, 1, 4}.str() == "(1, 1, 1, 1, 1, 1, 1, 4)");
  CHECK_THROWS_WITH_AS((Shape{1, 1, 1, 1, 1, 1, 1}[7]), doctest::Contains("no dim 7 in a 7-d shape"), Error);
}

TEST_CASE("core/tensor construction and access") {
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(x.shape() == Shape{2, 3});
  CHECK(x.dim() == 2);
  CHECK(x.size(-1) == 3);
  CHECK(x.numel() == 6);
  CHECK(x.at({1, 0}) == 4);
  CHECK(x.at({-1, -1}) == 6);
  CHECK(scalar_tensor(2.5f).item() == 2.5f);
  CHECK(scalar_tensor(2.5f).shape() == Shape{});

  SUBCASE("errors name the values") {
    CHECK_THROWS_WITH_AS(tensor({1, 2, 3}, {2, 2}),
                         doctest::Contains("tensor: 3 values do not fill shape (2, 2) (4 elements)"), Error);
    CHECK_THROWS_WITH_AS(x.item(), doctest::Contains("item: tensor of shape (2, 3) has 6 elements, not 1"), Error);
    CHECK_THROWS_WITH_AS(x.at({2, 0}), doctest::Contains("at: index 2 out of range for dim 0 of size 2"), Error);
    CHECK_THROWS_WITH_AS(x.at({0}), doctest::Contains("at: 1 indices for a tensor of shape (2, 3)"), Error);
    CHECK_THROWS_WITH_AS(x.size(2), doctest::Contains("size: dim 2 out of range"), Error);
    CHECK_THROWS_WITH_AS(Tensor().shape(), doctest::Contains("undefined tensor"), Error);
    CHECK_THROWS_WITH_AS(zeros({2, -1}), doctest::Contains("negative size in shape (2, -1)"), Error);
  }

  SUBCASE("detach shares the numbers, clone copies them") {
    Tensor d = x.detach();
    d.data()[0] = 100;
    CHECK(x.at({0, 0}) == 100);
    Tensor c = x.clone();
    c.data()[0] = -1;
    CHECK(x.at({0, 0}) == 100);
  }
}

TEST_CASE("core/int tensor") {
  IntTensor ids = int_tensor({3, 1, 4, 1, 5, 9}, {2, 3});
  CHECK(ids.shape() == Shape{2, 3});
  CHECK(ids.at({1, 2}) == 9);
  CHECK(ids.reshape({3, 2}).at({2, 1}) == 9);
  CHECK(arange_int(2, 5).to_vector() == std::vector<int64_t>{2, 3, 4});
  CHECK_THROWS_WITH_AS(int_tensor({1, 2}, {3}), doctest::Contains("int_tensor: 2 values do not fill shape (3)"), Error);
  CHECK_THROWS_WITH_AS(ids.reshape({4, 2}), doctest::Contains("reshape: cannot reshape (2, 3) (6 elements) to (4, 2)"),
                       Error);
}

TEST_CASE("core/factories") {
  CHECK(zeros({2, 2}).to_vector() == std::vector<float>{0, 0, 0, 0});
  CHECK(ones({3}).to_vector() == std::vector<float>{1, 1, 1});
  CHECK(full({2}, 7).to_vector() == std::vector<float>{7, 7});
  CHECK(eye(2).to_vector() == std::vector<float>{1, 0, 0, 1});
  CHECK(eye(2, 3).to_vector() == std::vector<float>{1, 0, 0, 0, 1, 0});
  // torch.arange semantics: ceil((end - start) / step) elements.
  CHECK(arange(5).to_vector() == std::vector<float>{0, 1, 2, 3, 4});
  CHECK(arange(1, 2, 0.25f).to_vector() == std::vector<float>{1, 1.25f, 1.5f, 1.75f});
  CHECK(arange(3, 0, -1).to_vector() == std::vector<float>{3, 2, 1});
  CHECK(arange(0, 0).numel() == 0);
  CHECK_THROWS_WITH_AS(arange(0, 1, 0), doctest::Contains("arange: step must be non-zero"), Error);
  CHECK_THROWS_WITH_AS(randint(5, 5, {2}), doctest::Contains("randint: empty range [5, 5)"), Error);
}

TEST_CASE("core/generator") {
  SUBCASE("splitmix64's published first outputs for seed 0") {
    // Reference values of the splitmix64 algorithm (Vigna's splitmix64.c), seed 0.
    Generator gen(0);
    CHECK(gen.next_u64() == 0xe220a8397b1dcdafULL);
    CHECK(gen.next_u64() == 0x6e789e6aa1b965f4ULL);
    CHECK(gen.next_u64() == 0x06c45d188009454fULL);
  }
  SUBCASE("same seed, same numbers; another seed, other numbers") {
    Generator a(42), b(42), c(43);
    Tensor x = randn({100}, a), y = randn({100}, b), z = randn({100}, c);
    CHECK(x.to_vector() == y.to_vector());
    CHECK(x.to_vector() != z.to_vector());
  }
  SUBCASE("the distributions have the right moments") {
    // Mathematics: U[0,1) has mean 1/2, variance 1/12; N(0,1) mean 0, variance 1.
    // With n = 100000 the standard error of the mean is ~0.001–0.003.
    Generator gen(7);
    const int n = 100000;
    Tensor u = rand({n}, gen), g = randn({n}, gen);
    double su = 0, su2 = 0, sg = 0, sg2 = 0;
    bool in_range = true;
    for (float v : u.to_vector()) {
      su += v, su2 += v * v;
      in_range = in_range && v >= 0 && v < 1;
    }
    CHECK(in_range);
    for (float v : g.to_vector()) sg += v, sg2 += v * v;
    CHECK(su / n == doctest::Approx(0.5).epsilon(0.01));
    CHECK(su2 / n - (su / n) * (su / n) == doctest::Approx(1.0 / 12).epsilon(0.02));
    CHECK(std::fabs(sg / n) < 0.015);
    CHECK(sg2 / n == doctest::Approx(1.0).epsilon(0.02));
    IntTensor r = randint(-2, 3, {1000}, gen);
    int seen[5] = {};
    for (int64_t v : r.to_vector()) {
      REQUIRE((v >= -2 && v < 3));
      ++seen[v + 2];
    }
    for (int count : seen) CHECK(count > 100);  // each of 5 values ~200 times
  }
  SUBCASE("manual_seed resets the default generator") {
    manual_seed(3);
    Tensor a = randn({4});
    manual_seed(3);
    CHECK(randn({4}).to_vector() == a.to_vector());
  }
}

// The expected strings are what PyTorch 1.13 (Debian's python3-torch) prints
// for the same tensors, except that qkv's grad_fn names have no "0" suffix.
TEST_CASE("core/printing") {
  Tensor a = tensor({1.5f, -2.25f, 3, 4}, {2, 2});
  CHECK(fmt::format("{}", a) == "tensor([[ 1.5000, -2.2500],\n        [ 3.0000,  4.0000]])");
  a.requires_grad_();
  CHECK(fmt::format("{}", a) == "tensor([[ 1.5000, -2.2500],\n        [ 3.0000,  4.0000]], requires_grad=True)");
  CHECK(fmt::format("{}", scalar_tensor(3.25f)) == "tensor(3.2500)");
  CHECK(fmt::format("{}", tensor({1e-5f, 1, 2})) == "tensor([1.0000e-05, 1.0000e+00, 2.0000e+00])");
  CHECK(fmt::format("{}", tensor({0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, -7.5f}, {2, 2, 2})) ==
        "tensor([[[ 0.5000,  1.5000],\n"
        "         [ 2.5000,  3.5000]],\n"
        "\n"
        "        [[ 4.5000,  5.5000],\n"
        "         [ 6.5000, -7.5000]]])");
  CHECK(fmt::format("{}", int_tensor({3, -10, 2})) == "tensor([  3, -10,   2])");
  CHECK(fmt::format("{}", zeros({0, 3})) == "tensor([], size=(0, 3))");
  CHECK(fmt::format("{}", arange(30) + 0.5f) ==
        "tensor([ 0.5000,  1.5000,  2.5000,  3.5000,  4.5000,  5.5000,  6.5000,  7.5000,\n"
        "         8.5000,  9.5000, 10.5000, 11.5000, 12.5000, 13.5000, 14.5000, 15.5000,\n"
        "        16.5000, 17.5000, 18.5000, 19.5000, 20.5000, 21.5000, 22.5000, 23.5000,\n"
        "        24.5000, 25.5000, 26.5000, 27.5000, 28.5000, 29.5000])");
  CHECK(fmt::format("{}", reshape(arange(2000) + 0.5f, {2, 1000})) ==
        "tensor([[5.0000e-01, 1.5000e+00, 2.5000e+00,  ..., 9.9750e+02, 9.9850e+02,\n"
        "         9.9950e+02],\n"
        "        [1.0005e+03, 1.0015e+03, 1.0025e+03,  ..., 1.9975e+03, 1.9985e+03,\n"
        "         1.9995e+03]])");
  Tensor y = mul(a, 2.0f);
  CHECK(fmt::format("{}", y) == "tensor([[ 3.0000, -4.5000],\n        [ 6.0000,  8.0000]], grad_fn=<MulBackward>)");
}

TEST_CASE("core/printing: size-1 dims, up to a million of them") {
  // PyTorch: a size-1 dim adds a bracket; the blocks of a dim are apart by a
  // newline per dim after it.
  CHECK(fmt::format("{}", reshape(arange(6) + 0.5f, {2, 1, 1, 3})) ==
        "tensor([[[[0.5000, 1.5000, 2.5000]]],\n\n\n        [[[3.5000, 4.5000, 5.5000]]]])");
  // A million dims: the printout is the element inside a million brackets.
  // (Printing took time quadratic in the dims, 7 s for 100,000: it would take
  // hours here.)
  const size_t n = 1'000'000;
  const Shape shape(std::vector<int64_t>(n, 1));
  const std::string brackets(n, '['), closing(n, ']');
  CHECK(fmt::format("{}", full(shape, 2.5f)) == "tensor(" + brackets + "2.5000" + closing + ")");
  CHECK(fmt::format("{}", zeros_int(shape)) == "tensor(" + brackets + "0" + closing + ")");
  // and between two elements, a newline for each of the million dims after the first
  const Shape two_rows = [&] {
    std::vector<int64_t> dims(n, 1);
    dims[0] = 2;
    return Shape(dims);
  }();
  const std::string expected = "tensor(" + brackets + "0" + closing.substr(1) + "," + std::string(n - 1, '\n') +
                               std::string(8, ' ') + brackets.substr(1) + "1" + closing + ")";
  CHECK(fmt::format("{}", arange_int(0, 2).reshape(two_rows)) == expected);
}

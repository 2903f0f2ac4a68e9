// Bad and extreme input for the core: the factories, Shape, and the
// accessors of Tensor and IntTensor. Each row is an input that used to crash,
// wrap around or allocate without bound, or one a user could plausibly give;
// each must end in a qkv::Error naming what was wrong.
//
// Expected behaviour comes from PyTorch where it has one (a 0-d tensor has no
// dim 0: "Dimension specified as 0 but tensor has no dimensions") and from
// int64 arithmetic otherwise (2⁶²·4 = 2⁶⁴ does not fit).
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "hardening/bad_input.hpp"

using namespace qkv;
using qkv::test::BadInput;
using qkv::test::check_bad_inputs;
using namespace qkv::test::extremes;

TEST_CASE("hardening/core: bad input to the factories") {
  check_bad_inputs({
      {"zeros: sizes whose product overflows int64",
       [] {
         zeros({k2to62, 4});
       },
       "overflows int64"},
      {"zeros: an overflowing product hidden behind a size-0 dim",
       [] {
         zeros({0, k2to62, 4});
       },
       "shape (0, 4611686018427387904, 4): the number of elements overflows int64"},
      {"ones: overflow",
       [] {
         ones({k2to62, 4});
       },
       "overflows int64"},
      {"zeros_int: overflow",
       [] {
         zeros_int({k2to62, 4});
       },
       "overflows int64"},
      {"zeros_int: a negative size",
       [] {
         zeros_int({2, -1});
       },
       "negative size in shape (2, -1)"},
      {"zeros_like: undefined", [] { zeros_like(Tensor()); }, "zeros_like: x is an undefined tensor"},
      {"ones_like: undefined", [] { ones_like(Tensor()); }, "ones_like: x is an undefined tensor"},
      {"full: overflow",
       [] {
         full({4, k2to62}, 1.0f);
       },
       "overflows int64"},
      {"rand: overflow",
       [] {
         rand({k2to62, k2to62});
       },
       "overflows int64"},
      {"randn: overflow",
       [] {
         randn({kMax, 2});
       },
       "overflows int64"},
      {"randint: overflow",
       [] {
         randint(0, 2, {kMax, kMax});
       },
       "overflows int64"},
      {"eye(2^32): 2^64 elements", [] { eye(int64_t{1} << 32); }, "overflows int64"},
      {"eye: n by m overflows", [] { eye(kMax, 3); }, "overflows int64"},
      {"zeros: more bytes than an address space holds", [] { zeros({int64_t{1} << 50}); },
       "more than the 281474976710656 bytes that can be addressed"},
      {"IntTensor::empty: more bytes than can be addressed", [] { IntTensor::empty({int64_t{1} << 46}); },
       "can be addressed"},
      {"zeros: a negative size",
       [] {
         zeros({2, -1});
       },
       "zeros: negative size in shape (2, -1)"},
      {"tensor: values do not fill the shape",
       [] {
         tensor({1, 2, 3}, {2, 2});
       },
       "3 values do not fill shape (2, 2)"},
      {"tensor: a negative size whose product matches",
       [] {
         tensor({1, 2, 3, 4}, {-2, -2});
       },
       "negative size"},
      {"eye: negative size", [] { eye(-1); }, "eye: sizes -1 and -1 must not be negative"},
      {"arange: step 0", [] { arange(0, 1, 0); }, "arange: step must be non-zero"},
      {"arange: NaN end", [] { arange(0, std::numeric_limits<float>::quiet_NaN()); }, "must be finite"},
      {"arange: infinite end", [] { arange(0, std::numeric_limits<float>::infinity()); }, "must be finite"},
      {"arange: more elements than int64 holds", [] { arange(0, 1e30f, 1); }, "too many"},
      {"arange: more elements than can be addressed", [] { arange(0, 3e18f, 1); }, "can be addressed"},
      {"arange_int: a range wider than int64", [] { arange_int(kMin, kMax); }, "arange_int: [-9223372036854775808, "},
      {"arange_int: more elements than can be addressed", [] { arange_int(0, kMax); }, "can be addressed"},
      {"randint: empty range", [] { randint(3, 3, {2}); }, "randint: empty range [3, 3)"},
  });
}

TEST_CASE("hardening/core: an allocation the machine cannot make is a qkv::Error naming the shape and bytes") {
  // 2⁴⁴ floats = 64 TiB: below the address-space cap, so it is really asked
  // for, and more than any machine running the tests has (RAM and swap).
  if (!qkv::test::huge_allocations_fail()) return;  // see bad_input.hpp
  check_bad_inputs({
      {"zeros of 64 TiB", [] { zeros({int64_t{1} << 44}); },
       "zeros: out of memory allocating shape (17592186044416) (70368744177664 bytes)"},
      {"MemoryBlock: 64 TiB", [] { MemoryBlock(size_t{1} << 46); },
       "MemoryBlock: out of memory allocating 70368744177664 bytes"},
      {"allocate_block of 64 TiB", [] { allocate_block(size_t{1} << 46); },
       "allocate_block: out of memory allocating 70368744177664 bytes"},
      {"allocate_block of SIZE_MAX bytes", [] { allocate_block(std::numeric_limits<size_t>::max()); },
       "allocate_block: out of memory allocating 18446744073709551615 bytes"},
  });
}

TEST_CASE("hardening/core: bad input to Shape and the Tensor and IntTensor accessors") {
  check_bad_inputs({
      {"Tensor::size(0) of a 0-d tensor", [] { scalar_tensor(1).size(0); },
       "size: dim 0 out of range for a 0-d tensor (it has no dims)"},
      {"Tensor::size(-1) of a 0-d tensor", [] { scalar_tensor(1).size(-1); }, "size: dim -1 out of range for a 0-d"},
      {"IntTensor::size(0) of a 0-d tensor", [] { int_tensor({7}, Shape{}).size(0); }, "out of range for a 0-d"},
      {"Tensor::size: dim out of range",
       [] {
         zeros({2, 3}).size(2);
       },
       "size: dim 2 out of range for a 2-d tensor"},
      {"Tensor::size: dim INT64_MIN",
       [] {
         zeros({2, 3}).size(kMin);
       },
       "size: dim -9223372036854775808 out of range"},
      {"Shape::operator[]: a dim a 0-d shape does not have", [] { (void)Shape{}[0]; },
       "shape (): no dim 0 in a 0-d shape"},
      {"Shape::operator[]: a negative dim index",
       [] {
         (void)Shape{2, 3}[-1];
       },
       "shape (2, 3): no dim -1"},
      {"Tensor::at: index past the end", [] { zeros({2}).at({2}); }, "at: index 2 out of range for dim 0 of size 2"},
      {"Tensor::at: INT64_MIN", [] { zeros({2}).at({kMin}); }, "at: index -9223372036854775808 out of range"},
      {"Tensor::at: too many indices",
       [] {
         zeros({2}).at({0, 0});
       },
       "at: 2 indices for a tensor of shape (2)"},
      {"Tensor::at on a 0-d tensor with an index", [] { scalar_tensor(1).at({0}); }, "at: 1 indices for a tensor"},
      {"Tensor::item of 2 elements", [] { zeros({2}).item(); }, "item: tensor of shape (2) has 2 elements, not 1"},
      {"Tensor::item of an empty tensor", [] { zeros({0}).item(); }, "has 0 elements, not 1"},
      {"Tensor(): shape", [] { Tensor().shape(); }, "Tensor: use of an undefined tensor"},
      {"Tensor(): item", [] { Tensor().item(); }, "Tensor: use of an undefined tensor"},
      {"Tensor(): data", [] { Tensor().data(); }, "Tensor: use of an undefined tensor"},
      {"Tensor(): clone", [] { Tensor().clone(); }, "Tensor: use of an undefined tensor"},
      {"Tensor(): detach", [] { Tensor().detach(); }, "Tensor: use of an undefined tensor"},
      {"Tensor(): backward", [] { Tensor().backward(); }, "backward: undefined tensor"},
      {"IntTensor(): item", [] { IntTensor().item(); }, "IntTensor: use of an undefined tensor"},
      {"IntTensor(): shape", [] { IntTensor().shape(); }, "IntTensor: use of an undefined tensor"},
      {"IntTensor(): numel", [] { IntTensor().numel(); }, "IntTensor: use of an undefined tensor"},
      {"IntTensor(): data", [] { IntTensor().data(); }, "IntTensor: use of an undefined tensor"},
      {"IntTensor(): to_vector", [] { IntTensor().to_vector(); }, "IntTensor: use of an undefined tensor"},
      {"IntTensor(): at", [] { IntTensor().at({0}); }, "IntTensor: use of an undefined tensor"},
      {"IntTensor(): reshape", [] { IntTensor().reshape({1}); }, "IntTensor: use of an undefined tensor"},
      {"IntTensor::reshape: negative sizes whose product matches",
       [] {
         int_tensor({1, 2, 3, 4}).reshape({-2, -2});
       },
       "reshape: invalid size -2 in (-2, -2)"},
      {"IntTensor::reshape: numel differs",
       [] {
         int_tensor({1, 2, 3}).reshape({2, 2});
       },
       "reshape: cannot reshape (3) (3 elements) to (2, 2)"},
      {"IntTensor::reshape: overflowing sizes",
       [] {
         int_tensor({}).reshape({0, k2to62, 4});
       },
       "overflows int64"},
      {"IntTensor::at: index past the end",
       [] {
         int_tensor({1, 2}).at({2});
       },
       "at: index 2 out of range"},
  });
}

TEST_CASE("hardening/core: the extremes that are not errors") {
  SUBCASE("a size-0 dim beside sizes whose product fits is an empty tensor") {
    CHECK(zeros({0, int64_t{1} << 40}).numel() == 0);
  }
  SUBCASE("randint over the whole int64 range stays in it, and over [k, k+1) gives k") {
    // [low, high) = [INT64_MIN, INT64_MAX): high - low = 2⁶⁴ - 1 only fits unsigned.
    Generator gen(1);
    IntTensor wide = randint(kMin, kMax, {64}, gen);
    bool negative = false, positive = false;
    for (int64_t v : wide.to_vector()) {
      CHECK(v < kMax);
      negative |= v < 0;
      positive |= v > 0;
    }
    CHECK(negative);  // 64 draws, each sign with probability 1/2: both appear but for 2⁻⁶³
    CHECK(positive);
    CHECK(randint(kMax - 1, kMax, {3}, gen).to_vector() == std::vector<int64_t>(3, kMax - 1));
  }
  SUBCASE("printing a tensor of 100,000 size-1 dims does not recurse once per dim") {
    std::vector<int64_t> dims(100000, 1);
    std::string s = to_string(full(Shape(dims), 2.0f));
    // One bracket per dim around the one element, in qkv's four decimals
    // (format.hpp): tensor([[…[2.0000]…]]).
    CHECK(s == "tensor(" + std::string(100000, '[') + "2.0000" + std::string(100000, ']') + ")");
  }
}

// PyTorch's uniform_(from, to) refuses from > to and a width past the largest
// float; normal_ refuses std < 0. NaN and infinite arguments would fill a
// tensor with NaN or inf without a word, so they are refused too.
TEST_CASE("hardening/core: bad ranges and spreads to Generator's draws") {
  Generator g(0);
  Generator* gen = &g;
  constexpr float kBig = std::numeric_limits<float>::max();
  check_bad_inputs({
      {"Generator::uniform: low > high", [=] { gen->uniform(1, 0); },
       "Generator::uniform: the range [low, high) must have finite low ≤ high and a finite width, got low 1 and high "
       "0"},
      {"Generator::uniform: NaN low", [=] { gen->uniform(kNaN, 1); }, "got low nan and high 1"},
      {"Generator::uniform: infinite high", [=] { gen->uniform(0, kInf); }, "got low 0 and high inf"},
      {"Generator::uniform: a width past the largest float", [=] { gen->uniform(-kBig, kBig); }, "a finite width"},
      {"Generator::normal: std -1", [=] { gen->normal(0, -1); },
       "Generator::normal: needs a finite mean and a finite std ≥ 0, got mean 0 and std -1"},
      {"Generator::normal: NaN std", [=] { gen->normal(0, kNaN); }, "got mean 0 and std nan"},
      {"Generator::normal: infinite mean", [=] { gen->normal(-kInf, 1); }, "got mean -inf and std 1"},
      {"Generator::randint: empty range", [=] { gen->randint(5, 5); }, "randint: empty range [5, 5)"},
      {"Generator::randint: high < low", [=] { gen->randint(kMax, kMin); },
       "randint: empty range [9223372036854775807, -9223372036854775808)"},
  });
  SUBCASE("the edges that are not errors: an empty range [a, a] gives a, std 0 gives the mean") {
    CHECK(g.uniform(2, 2) == 2.0f);
    CHECK(g.normal(3, 0) == 3.0f);
  }
  SUBCASE("U[low, high) never gives high, where low + (high - low)·u rounds up onto it") {
    // Seed 3747935's first draw has its top 24 bits all ones (found by
    // running splitmix64 over the seeds): u = 1 - 2⁻²⁴, and 1 + u is exactly
    // halfway between 2 - 2⁻²³ and 2, which rounds to even: 2.
    Generator edge(3747935);
    CHECK(Generator(3747935).uniform() == 1.0f - 0x1.0p-24f);
    CHECK(edge.uniform(1, 2) == 2.0f - 0x1.0p-23f);
  }
}

// torch.autograd.gradcheck refuses what would make its verdict meaningless
// ("gradcheck expects at least one input tensor to require gradient"); so
// does qkv's, with the values: a step of 0 divides by 0, a NaN tolerance
// passes nothing, a finite difference at NaN is NaN.
TEST_CASE("hardening/core: bad options and inputs to gradcheck") {
  auto square = [](const std::vector<Tensor>& x) { return x[0] * x[0]; };
  auto with = [](float eps, float atol, float rtol) {
    GradcheckOptions o;
    o.eps = eps;
    o.atol = atol;
    o.rtol = rtol;
    return o;
  };
  check_bad_inputs({
      {"gradcheck: eps 0", [=] { gradcheck(square, {ones({2})}, with(0, 1e-3f, 1e-2f)); },
       "gradcheck: eps must be finite and > 0, got eps 0"},
      {"gradcheck: eps -1", [=] { gradcheck(square, {ones({2})}, with(-1, 1e-3f, 1e-2f)); }, "got eps -1"},
      {"gradcheck: eps NaN", [=] { gradcheck(square, {ones({2})}, with(kNaN, 1e-3f, 1e-2f)); }, "got eps nan"},
      {"gradcheck: eps inf", [=] { gradcheck(square, {ones({2})}, with(kInf, 1e-3f, 1e-2f)); }, "got eps inf"},
      {"gradcheck: atol -1", [=] { gradcheck(square, {ones({2})}, with(1e-2f, -1, 1e-2f)); },
       "gradcheck: atol and rtol must be finite and ≥ 0, got atol -1 and rtol 0.01"},
      {"gradcheck: rtol NaN", [=] { gradcheck(square, {ones({2})}, with(1e-2f, 1e-3f, kNaN)); },
       "got atol 0.001 and rtol nan"},
      {"gradcheck: eps too small to move x = 1e8",
       [=] { gradcheck(square, {full({2}, 1e8f)}, with(1e-2f, 1e-3f, 1e-2f)); },
       "gradcheck: eps 0.01 does not fit input 0 (2) element 0 = 100000000: x - eps = 100000000 and x + eps = "
       "100000000 must be two different finite floats"},
      {"gradcheck: x + eps overflows", [=] { gradcheck(square, {full({1}, 3e38f)}, with(1e38f, 1e-3f, 1e-2f)); },
       "must be two different finite floats"},
      {"gradcheck: no inputs", [=] { gradcheck(square, {}); }, "gradcheck: no inputs to check"},
      {"gradcheck: an undefined input",
       [=] {
         gradcheck(square, {ones({1}), Tensor()});
       },
       "gradcheck: input 1 is undefined"},
      {"gradcheck: a NaN input",
       [=] {
         gradcheck(square, {tensor({1, kNaN}, {2})});
       },
       "gradcheck: input 0 (2) element 1 is nan: finite differences need finite inputs"},
      {"gradcheck: an infinite input", [=] { gradcheck(square, {tensor({-kInf}, {1})}); }, "element 0 is -inf"},
      {"gradcheck: an empty function", [] { gradcheck(nullptr, {ones({1})}); }, "gradcheck: the function is empty"},
      {"gradcheck: a function returning an undefined tensor",
       [] { gradcheck([](const std::vector<Tensor>&) { return Tensor(); }, {ones({1})}); },
       "gradcheck: the function returned an undefined tensor"},
  });
}

// record() is how a user's own op (examples/custom_layer) joins the graph, so
// a mistake there is an Error at the op, naming it, not a crash, a leak or a
// misleading message later inside backward().
TEST_CASE("hardening/core: bad input to record, record_accumulate and the saved tensors") {
  const auto pass_through = [](const SavedTensors&, const Tensor& dout) { return std::vector<Tensor>{dout}; };
  const auto add_into = [](const SavedTensors&, const Tensor&, Tensor&) {};
  check_bad_inputs({
      {"record: a null name",
       [=] {
         Tensor x = ones({2}).requires_grad_(), out = zeros({2});
         record(out, nullptr, {x}, {}, pass_through);
       },
       "record: the op's name is null"},
      {"record: an empty backward function",
       [] {
         Tensor x = ones({2}).requires_grad_(), out = zeros({2});
         record(out, "MyOp", {x}, {}, BackwardFn());
       },
       "record: MyOp: the backward function is empty"},
      {"record: an empty backward function, under NoGradGuard too",
       [] {
         NoGradGuard no_grad;
         Tensor x = ones({2}).requires_grad_(), out = zeros({2});
         record(out, "MyOp", {x}, {}, BackwardFn());
       },
       "record: MyOp: the backward function is empty"},
      {"record: an undefined output",
       [=] {
         Tensor x = ones({2}).requires_grad_(), out;
         record(out, "MyOp", {x}, {}, pass_through);
       },
       "record: MyOp: the output is undefined"},
      {"record: the output is its own input (a cycle)",
       [=] {
         Tensor x = ones({2}).requires_grad_();
         Tensor y = x * 2.0f;
         record(y, "MyOp", std::vector<Tensor>{x, y}, {}, pass_through);
       },
       "record: MyOp: the output is also input 1 (an op must return a new tensor)"},
      {"record: the output is a leaf that requires grad (a parameter)",
       [=] {
         Tensor x = ones({2}).requires_grad_(), w = zeros({2, 3}).requires_grad_();
         record(w, "MyOp", {x}, {}, pass_through);
       },
       "record: MyOp: the output of shape (2, 3) is a leaf that requires grad"},
      {"reuse_or_empty: an undefined dout", [] { reuse_or_empty(Tensor()); }, "Tensor: use of an undefined tensor"},
      {"record_accumulate: a null name",
       [=] {
         Tensor x = ones({2}).requires_grad_(), out = zeros({2});
         record_accumulate(out, nullptr, x, {}, add_into);
       },
       "record: the op's name is null"},
      {"record_accumulate: an empty backward function",
       [] {
         Tensor x = ones({2}).requires_grad_(), out = zeros({2});
         record_accumulate(out, "MyNarrow", x, {}, AccumulateFn());
       },
       "record: MyNarrow: the backward function is empty"},
      {"record_accumulate: an undefined output",
       [=] {
         Tensor x = ones({2}).requires_grad_(), out;
         record_accumulate(out, "MyNarrow", x, {}, add_into);
       },
       "record: MyNarrow: the output is undefined"},
      {"SavedTensors::operator[]: an index past what the op saved",
       [] {
         SavedTensors saved;
         saved.entries.emplace_back(ones({2}));
         (void)saved[1];
       },
       "saved[1]: out of range for the 1 tensor(s) the op saved"},
      {"SavedTensors::operator[]: an IntTensor read as a Tensor",
       [] {
         SavedTensors saved;
         saved.entries.emplace_back(int_tensor({1, 0}));
         (void)saved[0];
       },
       "saved[0] is an IntTensor: read it with saved.int_tensor(0)"},
      {"SavedTensors::int_tensor: a Tensor read as an IntTensor",
       [] {
         SavedTensors saved;
         saved.entries.emplace_back(ones({2}));
         (void)saved.int_tensor(0);
       },
       "saved.int_tensor(0): it is a Tensor: read it with saved[0]"},
      {"SavedTensors::int_tensor: an index past what the op saved",
       [] {
         SavedTensors saved;
         (void)saved.int_tensor(0);
       },
       "saved.int_tensor(0): out of range for the 0 tensor(s) the op saved"},
      {"record_accumulate: the output is its input",
       [=] {
         Tensor x = ones({2}).requires_grad_();
         Tensor y = x * 2.0f;
         record_accumulate(y, "MyNarrow", y, {}, add_into);
       },
       "record: MyNarrow: the output is also input 0"},
  });
}

TEST_CASE("hardening/core: record still accepts a good op, and records nothing when no input requires grad") {
  Tensor x = ones({2}).requires_grad_(), out = full({2}, 3.0f);
  record(out, "Triple", {x}, /*saved=*/{},
         [](const SavedTensors&, const Tensor& dout) { return std::vector<Tensor>{dout * 3.0f}; });
  CHECK(out.requires_grad());
  backward(sum(out));
  CHECK(x.grad().to_vector() == std::vector<float>{3.0f, 3.0f});  // d(Σ 3x)/dx = 3
  Tensor c = ones({2}), out2 = zeros({2});
  record(out2, "Triple", {c}, /*saved=*/{},
         [](const SavedTensors&, const Tensor& dout) { return std::vector<Tensor>{dout}; });
  CHECK_FALSE(out2.requires_grad());
}

// The caching allocator behind tensor storage (allocator.hpp): size classes,
// reuse of freed blocks, empty_cache, zeros on a dirty block, the NaN fill of
// empty in Debug and sanitizer builds, and errors for impossible sizes.
// Expected values come from the size-class rule and from what was written.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "hardening/bad_input.hpp"

using namespace qkv;

namespace {

// Under the sanitizers nothing is cached (every block is freed at once), so
// the tests of reuse have nothing to look at there.
#if defined(QKV_TEST_SANITIZE)
constexpr bool kCaching = false;
#else
constexpr bool kCaching = true;
#endif

// Debug (no NDEBUG) and sanitizer builds fill empty()'s storage (tensor.cpp).
#if !defined(NDEBUG) || defined(QKV_TEST_SANITIZE)
constexpr bool kFilled = true;
#else
constexpr bool kFilled = false;
#endif

}  // namespace

TEST_CASE("core/allocator: size classes") {
  SUBCASE("by the rule: multiples of 64 up to 256, then four per power of two") {
    CHECK(size_class(0) == 64);
    CHECK(size_class(1) == 64);
    CHECK(size_class(64) == 64);
    CHECK(size_class(65) == 128);
    CHECK(size_class(256) == 256);
    CHECK(size_class(257) == 320);  // (256, 512] in steps of 64
    CHECK(size_class(512) == 512);
    CHECK(size_class(513) == 640);    // (512, 1024] in steps of 128
    CHECK(size_class(4000) == 4096);  // (2048, 4096] in steps of 512
    CHECK(size_class(4097) == 5120);
    CHECK(size_class(size_t{1} << 40) == size_t{1} << 40);
  }
  SUBCASE("every class holds its request, is 64-byte aligned and wastes under 25%") {
    size_t previous = 0;
    for (size_t bytes = 1; bytes < (size_t{1} << 22); bytes = bytes * 9 / 8 + 1) {
      const size_t c = size_class(bytes);
      CHECK(c >= bytes);
      CHECK(c % 64 == 0);
      CHECK(c >= previous);  // a larger request never gets a smaller class
      if (bytes > 256) CHECK(c - bytes < bytes / 4);
      previous = c;
    }
  }
}

TEST_CASE("core/allocator: a freed block is handed out again") {
  if (!kCaching) return;
  empty_cache();
  Tensor a = Tensor::empty({1000});  // 4,000 bytes: class 4,096
  const float* block = a.data();
  CHECK(reinterpret_cast<uintptr_t>(block) % 64 == 0);
  a = Tensor();
  SUBCASE("to a request of the same size") { CHECK(Tensor::empty({1000}).data() == block); }
  SUBCASE("to a smaller request of the same class") { CHECK(Tensor::empty({990}).data() == block); }
  SUBCASE("to an IntTensor of the same class (512 int64 = 4,096 bytes)") {
    CHECK(reinterpret_cast<const void*>(IntTensor::empty({512}).data()) == block);
  }
  SUBCASE("not to another class") {
    Tensor other = Tensor::empty({1100});  // 4,400 bytes: class 5,120
    CHECK(other.data() != block);
    CHECK(Tensor::empty({1000}).data() == block);  // still there for its own class
  }
}

TEST_CASE("core/allocator: memory_stats and empty_cache") {
  empty_cache();
  const MemoryStats before = memory_stats();
  CHECK(before.cached_bytes == 0);
  CHECK(before.cached_blocks == 0);
  {
    Tensor a = Tensor::empty({1000});
    IntTensor b = IntTensor::empty({100});  // 800 bytes: class 896
    const MemoryStats live = memory_stats();
    CHECK(live.allocated_bytes == before.allocated_bytes + 4096 + 896);
    CHECK(live.peak_allocated_bytes >= live.allocated_bytes);
  }
  const MemoryStats freed = memory_stats();
  CHECK(freed.allocated_bytes == before.allocated_bytes);
  CHECK(freed.cached_bytes == (kCaching ? 4096 + 896 : 0));
  CHECK(freed.cached_blocks == (kCaching ? 2 : 0));

  SUBCASE("empty_cache releases every free block") {
    empty_cache();
    CHECK(memory_stats().cached_bytes == 0);
    CHECK(memory_stats().cached_blocks == 0);
    CHECK(memory_stats().allocated_bytes == before.allocated_bytes);
  }
  SUBCASE("and leaves live tensors alone") {
    Tensor x = arange(1000.0f);
    empty_cache();
    CHECK(memory_stats().cached_bytes == 0);
    for (int64_t i = 0; i < 1000; ++i) REQUIRE(x.data()[i] == static_cast<float>(i));
  }
}

TEST_CASE("core/allocator: the blocks of a training step are reused by the next") {
  if (!kCaching) return;
  // Same shapes every step, so once the first steps have filled the cache,
  // a step takes every block it needs from it and gives them all back: the
  // memory held (live plus cached) stops growing.
  Generator gen(0);
  nn::Linear layer(32, 16, true, gen);
  optim::Adam opt(layer.parameters(), 0.01f);
  Tensor x = randn({64, 32}, gen), y = randn({64, 16}, gen);
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = mse_loss(layer(x), y);
    loss.backward();
    opt.step();
  };
  auto held = [] { return memory_stats().allocated_bytes + memory_stats().cached_bytes; };
  for (int i = 0; i < 3; ++i) step();
  const int64_t after_warmup = held();
  for (int i = 0; i < 20; ++i) step();
  CHECK(held() == after_warmup);
}

TEST_CASE("core/allocator: zeros is zero on a reused, dirty block") {
  empty_cache();
  Tensor dirty = Tensor::empty({1000});
  std::fill_n(dirty.data(), 1000, 7.0f);
  const float* block = dirty.data();
  dirty = Tensor();
  Tensor z = zeros({990});
  if (kCaching) CHECK(z.data() == block);  // the dirty block, so the zeros were written
  CHECK(std::all_of(z.data(), z.data() + z.numel(), [](float v) { return v == 0.0f; }));

  IntTensor dirty_int = IntTensor::empty({512});
  std::fill_n(dirty_int.data(), 512, int64_t{-3});
  dirty_int = IntTensor();
  IntTensor zi = zeros_int({500});
  CHECK(std::all_of(zi.data(), zi.data() + zi.numel(), [](int64_t v) { return v == 0; }));
}

TEST_CASE("core/allocator: empty is NaN (kEmptyPoison for int64) in Debug and sanitizer builds") {
  if (!kFilled) return;  // Release: empty leaves the block as it was
  empty_cache();
  Tensor dirty = Tensor::empty({1000});
  std::fill_n(dirty.data(), 1000, 1.0f);
  dirty = Tensor();
  Tensor x = Tensor::empty({1000});  // the block that held ones, in a caching build
  CHECK(std::all_of(x.data(), x.data() + x.numel(), [](float v) { return std::isnan(v); }));
  CHECK(std::isnan(sum(x).item()));  // what a forgotten element does to a result
  IntTensor i = IntTensor::empty({7});
  CHECK(std::all_of(i.data(), i.data() + i.numel(), [](int64_t v) { return v == kEmptyPoison; }));
  CHECK_THROWS_WITH_AS(index_select(ones({3}), 0, IntTensor::empty({1})),
                       doctest::Contains("index -9223372036854775808 out of range"), Error);
}

TEST_CASE("core/allocator: storage is never null, even with no elements") {
  CHECK(Tensor::empty({0}).data() != nullptr);
  CHECK(tensor(std::vector<float>{}, {0}).data() != nullptr);
  IntTensor none = int_tensor(std::vector<int64_t>{}, {2, 0});
  CHECK(none.defined());  // an IntTensor is defined by having storage
  CHECK(none.data() != nullptr);
}

TEST_CASE("core/allocator: threads allocating at once each get their own blocks") {
  // Each thread fills its tensors with its own number and reads them back:
  // a block handed to two threads at once, or a free list torn by a race,
  // shows as another thread's number or a crash.
  const MemoryStats before = memory_stats();
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &bad] {
      const float mine = static_cast<float>(t + 1);
      for (int i = 0; i < 2000; ++i) {
        std::vector<Tensor> held;
        for (int64_t n : {16, 1000, 250, 4096}) {
          held.push_back(Tensor::empty({n + i % 7}));
          std::fill_n(held.back().data(), held.back().numel(), mine);
        }
        for (const Tensor& h : held)
          if (!std::all_of(h.data(), h.data() + h.numel(), [mine](float v) { return v == mine; })) ++bad[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(bad == std::vector<int>(4, 0));
  CHECK(memory_stats().allocated_bytes == before.allocated_bytes);  // every block came back
}

TEST_CASE("core/allocator: a size no machine can provide is a qkv::Error naming the shape and bytes") {
  CHECK_THROWS_WITH_AS(Tensor::empty({int64_t{1} << 50}),
                       doctest::Contains("empty: shape (1125899906842624) has 1125899906842624 elements of 4 bytes, "
                                         "more than the 281474976710656 bytes that can be addressed"),
                       Error);
  CHECK_THROWS_WITH_AS(IntTensor::empty({3, -2}), doctest::Contains("empty: negative size in shape (3, -2)"), Error);
  // An op or layer gives its own name.
  CHECK_THROWS_WITH_AS(
      Tensor::empty({int64_t{1} << 62, 4}, "Linear"),
      doctest::Contains("Linear: shape (4611686018427387904, 4): the number of elements overflows int64"), Error);
  if (qkv::test::huge_allocations_fail()) {  // see bad_input.hpp
    // 2⁴⁴ floats = 64 TiB: under the address-space cap, so it is really asked for.
    CHECK_THROWS_WITH_AS(Tensor::empty({int64_t{1} << 44}),
                         doctest::Contains("empty: out of memory allocating shape (17592186044416) "
                                           "(70368744177664 bytes)"),
                         Error);
    CHECK_THROWS_WITH_AS(zeros_int({int64_t{1} << 43}),
                         doctest::Contains("zeros_int: out of memory allocating shape (8796093022208) "
                                           "(70368744177664 bytes)"),
                         Error);
  }
  // The allocator still works after refusing.
  Tensor after = ones({10});
  CHECK(sum(after).item() == 10.0f);
}

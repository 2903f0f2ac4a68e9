// The thread pool, and the promise the kernels make on it: the same result,
// bit for bit, on 1, 2, 3 or 4 threads.
//
// Each kernel is run at every thread count on inputs big enough to be split
// (sizes that do not divide evenly by the pieces, the SIMD width or the
// register block), and its output compared with the one-thread output with
// ==, not a tolerance: any change in summation order would show.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/dropout.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/gemm.hpp"
#include "kernels/kernel_test_util.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/optim.hpp"
#include "kernels/parallel.hpp"
#include "kernels/reduce.hpp"
#include "kernels/softmax.hpp"

using namespace qkv::kernels;
using namespace qkv::kernels::test;

namespace {

constexpr int kThreadCounts[] = {1, 2, 3, 4};

// Sets the thread count for one scope and puts the old one back.
struct ThreadsFor {
  int old = num_threads();
  explicit ThreadsFor(int n) { set_num_threads(n); }
  ~ThreadsFor() { set_num_threads(old); }
};

// run() on 1 thread, then on each other count: every output equal to the
// first, bit for bit (NaN payloads included: memcmp, not ==).
void check_same_at_every_thread_count(const std::function<std::vector<float>()>& run) {
  std::vector<float> one;
  {
    ThreadsFor threads(1);
    one = run();
  }
  for (int n : kThreadCounts) {
    CAPTURE(n);
    ThreadsFor threads(n);
    std::vector<float> out = run();
    REQUIRE(out.size() == one.size());
    size_t differ = 0;
    for (size_t i = 0; i < out.size(); ++i) differ += std::memcmp(&out[i], &one[i], sizeof(float)) != 0;
    CHECK(differ == 0);
  }
}

// Whether a loop of `tasks` runs every task exactly once.
bool every_task_once(int64_t tasks) {
  std::vector<std::atomic<int>> runs(static_cast<size_t>(tasks));
  parallel_for(tasks, [&](int64_t t) { runs[static_cast<size_t>(t)]++; });
  for (auto& r : runs)
    if (r.load() != 1) return false;
  return true;
}

// How a forked child ended: its exit code, or -1 if a signal killed it, or
// -2 if it had not ended within `timeout` (it is then killed, with any child
// of its own), so that a hang fails the test instead of stopping the suite.
int run_in_child(const std::function<bool()>& child, std::chrono::seconds timeout) {
  std::fflush(nullptr);  // or the child would print the parent's buffered output again
  const pid_t pid = fork();
  if (pid < 0) return -3;
  if (pid == 0) {
    setpgid(0, 0);               // a process group of its own, killed as one
    std::exit(child() ? 0 : 1);  // exit, not _exit: the pool's destructor runs at exit too
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);  // in case it had not made its group yet
      waitpid(pid, &status, 0);
      return -2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Generous: the child runs a few loops (milliseconds), under a sanitizer too.
constexpr std::chrono::seconds kChildTimeout{30};

}  // namespace

TEST_CASE("kernels/parallel_for: every task runs exactly once") {
  for (int n : kThreadCounts) {
    CAPTURE(n);
    ThreadsFor threads(n);
    for (int64_t tasks : {0, 1, 2, 3, 7, 100, 1001}) {
      CAPTURE(tasks);
      std::vector<std::atomic<int>> runs(static_cast<size_t>(tasks));
      parallel_for(tasks, [&](int64_t t) { runs[static_cast<size_t>(t)]++; });
      int64_t wrong = 0;
      for (auto& r : runs) wrong += r.load() != 1;
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("kernels/parallel_for: loops right after each other, and after the workers fell asleep") {
  // Waiting workers spin for a while, then sleep: both ways of being handed
  // the next loop must run every task once. 2 ms is past the spin.
  for (int n : {2, 3}) {
    CAPTURE(n);
    ThreadsFor threads(n);
    for (int round = 0; round < 6; ++round) {
      CAPTURE(round);
      if (round % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      for (int loop = 0; loop < 50; ++loop) {
        std::vector<std::atomic<int>> runs(64);
        parallel_for(64, [&](int64_t t) { runs[static_cast<size_t>(t)]++; });
        int64_t wrong = 0;
        for (auto& r : runs) wrong += r.load() != 1;
        REQUIRE(wrong == 0);
      }
    }
  }
}

TEST_CASE("kernels/parallel_for: a loop inside a task runs inline") {
  ThreadsFor threads(3);
  std::atomic<int64_t> sum{0};
  parallel_for(6, [&](int64_t t) {
    CHECK(available_threads() == 1);
    parallel_for(10, [&](int64_t u) { sum += t * 10 + u; });
  });
  CHECK(sum.load() == 59 * 60 / 2);  // every (t, u) once: Σ of 0 … 59
}

TEST_CASE("kernels/parallel_for: a task's exception reaches the caller") {
  for (int n : {1, 3}) {
    CAPTURE(n);
    ThreadsFor threads(n);
    std::atomic<int> ran{0};
    auto loop = [&] {
      parallel_for(20, [&](int64_t t) {
        ran++;
        if (t == 13) throw std::runtime_error("task 13 failed");
      });
    };
    CHECK_THROWS_WITH_AS(loop(), "task 13 failed", std::runtime_error);
    // On one thread the loop stops at the throw; the pool runs the others.
    CHECK(ran.load() >= 14);
    // The pool still works afterwards.
    std::atomic<int> after{0};
    parallel_for(5, [&](int64_t) { after++; });
    CHECK(after.load() == 5);
  }
}

// A child process has only the thread that forked: the parent's workers are
// not there. -2 is a hang (see run_in_child).
TEST_CASE("kernels/fork: a child of a process with a pool runs loops, changes the count and exits") {
#ifdef QKV_TEST_SANITIZE
  // As below: the child exits through exit(), and LeakSanitizer there reads
  // the parent's worker threads' memory as leaked.
  MESSAGE("skipped under the sanitizers: LeakSanitizer in the child of a threaded process reports false leaks");
  return;
#endif
  ThreadsFor threads(3);
  REQUIRE(every_task_once(100));  // the parent's pool now has 2 workers
  SUBCASE("loops, then exit") {
    CHECK(run_in_child([] { return every_task_once(100) && every_task_once(7); }, kChildTimeout) == 0);
  }
  SUBCASE("set_num_threads, then loops, then exit") {
    CHECK(run_in_child(
              [] {
                set_num_threads(2);
                return num_threads() == 2 && every_task_once(100);
              },
              kChildTimeout) == 0);
  }
  SUBCASE("exit without a loop") {
    CHECK(run_in_child([] { return true; }, kChildTimeout) == 0);
  }
  SUBCASE("a grandchild") {
    CHECK(
        run_in_child(
            [] { return every_task_once(50) && run_in_child([] { return every_task_once(50); }, kChildTimeout) == 0; },
            kChildTimeout) == 0);
  }
  // And the parent's pool still works.
  CHECK(every_task_once(100));
}

TEST_CASE("kernels/fork: fork while another thread runs loops") {
  // The fork waits for the running loop to end, so the child never inherits
  // a pool in the middle of one.
#ifdef QKV_TEST_SANITIZE
  // The child exits through exit() (the pool's destructor must run), and so
  // LeakSanitizer checks it: the looping thread's live memory, copied into a
  // child where that thread does not exist, reads to it as leaked.
  MESSAGE("skipped under the sanitizers: LeakSanitizer in the child of a threaded process reports false leaks");
  return;
#endif
  ThreadsFor threads(2);
  std::atomic<bool> stop{false}, all_right{true};
  std::thread looper([&] {
    while (!stop.load())
      if (!every_task_once(64)) all_right = false;
  });
  for (int i = 0; i < 5; ++i) {
    CAPTURE(i);
    CHECK(run_in_child([] { return every_task_once(64); }, kChildTimeout) == 0);
  }
  stop = true;
  looper.join();
  CHECK(all_right.load());
}

TEST_CASE("kernels/num_threads: set, and QKV_NUM_THREADS's text") {
  {
    ThreadsFor threads(3);
    CHECK(num_threads() == 3);
    CHECK(available_threads() == 3);
  }
  CHECK_THROWS_AS(set_num_threads(0), std::invalid_argument);
  CHECK(parse_num_threads("1") == 1);
  CHECK(parse_num_threads("16") == 16);
  for (const char* bad : {"0", "-2", "two", "3x", "", "100000"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_num_threads(bad), doctest::Contains("QKV_NUM_THREADS"), std::invalid_argument);
  }
}

TEST_CASE("kernels/num_threads: the default count leaves other programs their cores") {
  // threads = cores − round(load − this process's own cores), within [1, cores].
  CHECK(threads_for_load(2, 0.1, 0.0) == 2);   // an idle machine: every core
  CHECK(threads_for_load(2, 2.0, 2.0) == 2);   // the load is this process on both cores
  CHECK(threads_for_load(2, 3.0, 1.33) == 1);  // another program keeps one core busy
  CHECK(threads_for_load(2, 2.0, 1.0) == 1);   // the same, with this process on one thread
  CHECK(threads_for_load(2, 7.5, 1.0) == 1);   // a machine far busier than its cores: still 1
  CHECK(threads_for_load(8, 3.4, 1.0) == 6);   // 2.4 cores' worth of others
  CHECK(threads_for_load(4, 1.0, 3.0) == 4);   // own use above the load (the average lags): no others
  CHECK(threads_for_load(2, 1e300, 0.0) == 1);
  // set_num_threads turns the default off: the count stays what was set.
  ThreadsFor threads(3);
  CHECK(num_threads() == 3);
}

TEST_CASE("kernels/gemm: the same on 1, 2, 3 and 4 threads") {
  // Shapes past the size where gemm goes parallel: many row blocks (M = 301,
  // not a multiple of 6 or 96), few rows and many columns (M = 7: the columns
  // are split), K over one slice of 256 (so later slices accumulate), and
  // N = 2100 over one block of 2048 columns; N = 98 ends in 2 columns of
  // dot products (see gemm_edges.cpp's dot_products), in row groups of 8 that a
  // split of the rows may cut.
  struct Case {
    int64_t M, N, K;
  };
  for (Case c :
       {Case{301, 157, 263}, Case{7, 2100, 300}, Case{130, 1031, 61}, Case{97, 333, 520}, Case{150, 98, 300}}) {
    for (bool trans_a : {false, true}) {
      for (bool trans_b : {false, true}) {
        for (bool accumulate : {false, true}) {
          CAPTURE(c.M);
          CAPTURE(c.N);
          CAPTURE(c.K);
          CAPTURE(trans_a);
          CAPTURE(trans_b);
          CAPTURE(accumulate);
          const std::vector<float> A = random_vector(c.M * c.K, 1), B = random_vector(c.K * c.N, 2);
          const std::vector<float> C0 = random_vector(c.M * c.N, 3);
          check_same_at_every_thread_count([&] {
            std::vector<float> C = C0;
            gemm(trans_a, trans_b, c.M, c.N, c.K, A.data(), trans_a ? c.M : c.K, B.data(), trans_b ? c.K : c.N,
                 C.data(), c.N, accumulate);
            return C;
          });
        }
      }
    }
  }
}

TEST_CASE("kernels/gemm_batched: one gemm per matrix, on any number of threads") {
  // 37 products of (11, 9)·(9, 13), the second operand broadcast (every
  // matrix reads the same B, offset 0), and 5 of (150, 70)·(70, 90), big
  // enough that each is split on its own when the batch is too short to share.
  struct Case {
    int64_t batch, M, N, K;
    bool broadcast_b;
  };
  for (Case c : {Case{37, 11, 13, 9, true}, Case{37, 11, 13, 9, false}, Case{5, 150, 90, 70, false},
                 Case{1, 301, 157, 263, false}}) {
    for (bool trans_a : {false, true}) {
      for (bool trans_b : {false, true}) {
        CAPTURE(c.batch);
        CAPTURE(c.M);
        CAPTURE(trans_a);
        CAPTURE(trans_b);
        const int64_t a_size = c.M * c.K, b_size = c.K * c.N, c_size = c.M * c.N;
        const std::vector<float> A = random_vector(c.batch * a_size, 4), B = random_vector(c.batch * b_size, 5);
        std::vector<int64_t> a_at, b_at;
        for (int64_t i = 0; i < c.batch; ++i)
          a_at.push_back(i * a_size), b_at.push_back(c.broadcast_b ? 0 : i * b_size);
        const int64_t lda = trans_a ? c.M : c.K, ldb = trans_b ? c.K : c.N;

        // The definition: one gemm call per matrix, on one thread.
        std::vector<float> expected(static_cast<size_t>(c.batch * c_size));
        {
          ThreadsFor threads(1);
          for (int64_t i = 0; i < c.batch; ++i)
            gemm(trans_a, trans_b, c.M, c.N, c.K, A.data() + a_at[i], lda, B.data() + b_at[i], ldb,
                 expected.data() + i * c_size, c.N, false);
        }
        for (int n : kThreadCounts) {
          CAPTURE(n);
          ThreadsFor threads(n);
          std::vector<float> C(expected.size(), kNaN);
          gemm_batched(trans_a, trans_b, c.batch, c.M, c.N, c.K, A.data(), a_at.data(), lda, B.data(), b_at.data(), ldb,
                       C.data(), c_size, c.N, false);
          CHECK(std::memcmp(C.data(), expected.data(), C.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_CASE("kernels/elementwise: the same on 1, 2, 3 and 4 threads") {
  // 300,007 floats: several pieces, and a length that is not a multiple of
  // the SIMD width (the scalar tail) nor of the pieces.
  const int64_t n = 300'007;
  const std::vector<float> a = random_vector(n, 6, -3.0f, 3.0f), b = random_vector(n, 7, 0.5f, 2.0f);
  for (Unary op : {Unary::Exp, Unary::Tanh, Unary::Gelu, Unary::Relu, Unary::Neg}) {
    CAPTURE(int(op));
    check_same_at_every_thread_count([&] {
      std::vector<float> y(n);
      unary(op, n, a.data(), y.data());
      return y;
    });
  }
  for (Binary op : {Binary::Add, Binary::Div, Binary::Pow}) {
    CAPTURE(int(op));
    check_same_at_every_thread_count([&] {
      std::vector<float> out(n), out_scalar(n);
      binary(op, n, a.data(), 1, b.data(), 1, out.data());
      binary(op, n, a.data(), 1, b.data(), 0, out_scalar.data());  // a ∘ b[0]
      out.insert(out.end(), out_scalar.begin(), out_scalar.end());
      return out;
    });
  }
  check_same_at_every_thread_count([&] {
    std::vector<float> y = b;
    axpy(n, 0.3f, a.data(), y.data());
    return y;
  });
}

TEST_CASE("kernels/reduce: the same on 1, 2, 3 and 4 threads") {
  // Rows cut into pieces (n = 1,000,003 and 3 × 70,001), many short rows,
  // and the slice path split by outer index and by columns.
  struct Shape {
    int64_t outer, n, inner;
  };
  for (Shape s : {Shape{1, 1'000'003, 1}, Shape{3, 70'001, 1}, Shape{5'001, 37, 1}, Shape{7, 1'001, 301},
                  Shape{1, 300, 7'001}, Shape{2, 5, 40'003}}) {
    CAPTURE(s.outer);
    CAPTURE(s.n);
    CAPTURE(s.inner);
    const std::vector<float> x = random_vector(s.outer * s.n * s.inner, 8);
    for (Reduce op : {Reduce::Sum, Reduce::Max, Reduce::Min}) {
      CAPTURE(int(op));
      check_same_at_every_thread_count([&] {
        std::vector<float> out(s.outer * s.inner);
        reduce(op, s.outer, s.n, s.inner, x.data(), out.data());
        return out;
      });
    }
  }
}

TEST_CASE("kernels/adam, sgd, sum_squares: the same on 1, 2, 3 and 4 threads") {
  // 300,007 numbers: several pieces for every kernel, and a length that is
  // not a multiple of the SIMD width. Two steps, so the moments carry over.
  const int64_t n = 300'007;
  const std::vector<float> p0 = random_vector(n, 10, -2.0f, 2.0f), g = random_vector(n, 11, -3.0f, 3.0f);
  const AdamStep adam_step{0.9f, 0.999f, 1e-3f / 0.19f, 0.0447f, 1e-8f, 0.01f, 1 - 1e-5f};
  check_same_at_every_thread_count([&] {
    std::vector<float> p = p0, m(n, 0.0f), v(n, 0.0f);
    for (int step = 0; step < 2; ++step) adam(adam_step, n, p.data(), g.data(), m.data(), v.data());
    p.insert(p.end(), m.begin(), m.end());
    p.insert(p.end(), v.begin(), v.end());
    return p;
  });
  check_same_at_every_thread_count([&] {
    std::vector<float> p = p0, buf(n, 0.0f);
    for (int step = 0; step < 2; ++step)
      sgd({0.1f, 0.9f, 0.1f, 0.01f, true, step == 0}, n, p.data(), g.data(), buf.data());
    p.insert(p.end(), buf.begin(), buf.end());
    return p;
  });
  const std::vector<float> x = random_vector(1'000'003, 13, -3.0f, 3.0f);
  for (int64_t len : {int64_t{131'071}, int64_t{1'000'003}}) {  // just under 2 pieces (one loop), and 15 pieces
    CAPTURE(len);
    check_same_at_every_thread_count([&] {
      const double sum = sum_squares(len, x.data());
      float halves[2];  // the double's bits, as two floats, so memcmp compares all of them
      std::memcpy(halves, &sum, sizeof sum);
      return std::vector<float>(halves, halves + 2);
    });
  }
}

TEST_CASE("kernels/dropout: the same mask on 1, 2, 3 and 4 threads") {
  // 100,003 elements: three pieces, each drawing from its own offset of the stream.
  const int64_t n = 100'003;
  const std::vector<float> x = random_vector(n, 14);
  check_same_at_every_thread_count([&] {
    std::vector<float> y(n), mask(n);
    dropout(n, 0x0123456789abcdefULL, 0.3f, 1 / 0.7f, x.data(), y.data(), mask.data());
    y.insert(y.end(), mask.begin(), mask.end());
    return y;
  });
}

TEST_CASE("kernels/softmax, cross_entropy, layer_norm: the same on 1, 2, 3 and 4 threads") {
  // 3,001 rows of 37 (no multiple of the SIMD width): many tasks of whole
  // rows; and 5 rows of 20,011, one row a task.
  for (std::pair<int64_t, int64_t> shape : {std::pair<int64_t, int64_t>{3'001, 37}, {5, 20'011}}) {
    const int64_t rows = shape.first, n = shape.second;
    CAPTURE(rows);
    CAPTURE(n);
    const size_t size = static_cast<size_t>(rows * n);
    const std::vector<float> x = random_vector(size, 15, -4.0f, 4.0f), dy = random_vector(size, 16);
    std::vector<int64_t> lens(static_cast<size_t>(rows)), target(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      lens[static_cast<size_t>(r)] = r % (n + 1);
      target[static_cast<size_t>(r)] = r % 7 == 0 ? -100 : (r * 13) % n;  // some ignored
    }
    check_same_at_every_thread_count([&] {
      std::vector<float> out(6 * size);
      float* o = out.data();
      softmax(rows, n, 1, x.data(), o);
      log_softmax(rows, n, 1, x.data(), o + size);
      softmax_backward(rows, n, 1, o, dy.data(), o + 2 * size);
      log_softmax_backward(rows, n, 1, o + size, dy.data(), o + 3 * size);
      masked_softmax(rows, n, lens.data(), x.data(), o + 4 * size);
      masked_softmax_backward(rows, n, lens.data(), o + 4 * size, dy.data(), o + 5 * size);
      return out;
    });
    check_same_at_every_thread_count([&] {
      std::vector<float> loss(static_cast<size_t>(rows)), stats(2 * static_cast<size_t>(rows)), dx(size);
      cross_entropy(rows, n, x.data(), target.data(), nullptr, -100, 0.1f, loss.data(), stats.data());
      cross_entropy_backward(rows, n, x.data(), stats.data(), target.data(), nullptr, -100, 0.1f, dy.data(), dx.data());
      loss.insert(loss.end(), stats.begin(), stats.end());
      loss.insert(loss.end(), dx.begin(), dx.end());
      return loss;
    });
    const std::vector<float> w = random_vector(static_cast<size_t>(n), 17),
                             b = random_vector(static_cast<size_t>(n), 18);
    check_same_at_every_thread_count([&] {
      std::vector<float> y(size), mean(static_cast<size_t>(rows)), rstd(static_cast<size_t>(rows));
      layer_norm(rows, n, x.data(), w.data(), b.data(), 1e-5f, y.data(), mean.data(), rstd.data());
      y.insert(y.end(), mean.begin(), mean.end());
      y.insert(y.end(), rstd.begin(), rstd.end());
      return y;
    });
  }
}

TEST_CASE("kernels/sum_squares: a long array cut into pieces still sums right") {
  // The pieces change the order of the sum, not its accuracy: both it and
  // the reference sum n non-negative doubles, each square exact, so each is
  // within (n − 1)·2⁻⁵³ of the exact sum, relatively.
  const int64_t n = 1'000'003;
  const std::vector<float> x = random_vector(n, 12, -3.0f, 3.0f);
  const double got = sum_squares(n, x.data()), want = sum_squares_reference(n, x.data());
  CHECK(std::abs(got - want) <= 2 * static_cast<double>(n) * 0x1p-53 * want);
}

TEST_CASE("kernels/reduce: a long row cut into pieces still sums right") {
  // The pieces change the order of the sum, not its accuracy: against the
  // reference within the bound a float sum of n terms keeps, n·u·Σ|x| each.
  const int64_t n = 1'000'003;
  const std::vector<float> x = random_vector(n, 9);
  float out = 0, out_ref = 0;
  reduce(Reduce::Sum, 1, n, 1, x.data(), &out);
  reduce_reference(Reduce::Sum, 1, n, 1, x.data(), &out_ref);
  double abs_sum = 0;
  for (float v : x) abs_sum += std::abs(v);
  CHECK(std::abs(double(out) - double(out_ref)) <= 2 * static_cast<double>(n) * kU * abs_sum);
  // Max picks one of the inputs: exact.
  float mx = 0, mx_ref = 0;
  reduce(Reduce::Max, 1, n, 1, x.data(), &mx);
  reduce_reference(Reduce::Max, 1, n, 1, x.data(), &mx_ref);
  CHECK(mx == mx_ref);
}

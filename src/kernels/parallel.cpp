// The thread pool behind parallel_for: workers that wait until a loop is
// handed out, take its tasks one at a time from a shared counter, and wait
// again.
//
// One loop at a time: the caller publishes the loop (a generation number
// tells the workers it is new), wakes the workers that sleep, takes tasks
// itself, then withdraws the loop and waits for the workers that joined it
// to finish their last task. Tasks are claimed with an atomic fetch_add, so
// a slow thread (the machine may be shared) simply takes fewer.
//
// Waiting spins first, then sleeps. A training step runs dozens of parallel
// loops a few hundred microseconds apart; a worker asleep on a condition
// variable costs the caller a futex call and itself a wake-up of some
// microseconds (tens on a virtual machine, whose idle CPU has to be woken by
// the host), enough to make a small model's step slower on 2 threads than
// on 1. So a worker that finished a loop polls for the next one for kSpin
// before it sleeps, and the caller polls for its workers' last tasks the
// same way; an idle pool still sleeps and costs nothing (the OpenMP
// runtimes' spin-then-block wait, GOMP_SPINCOUNT's).
//
// fork(): the child has only the thread that forked, so the parent's workers
// do not exist there, and joining them (at exit, in set_num_threads) would
// wait forever. As OpenMP runtimes and PyTorch do, a pthread_atfork handler
// makes the fork wait for a running loop to end, and gives the child an
// empty pool: its first parallel loop starts workers of its own.
//
// The default count follows the machine's load (see default count below).
//
// A build without threads (QKV_THREADS=0: WebAssembly in a page, where
// there are none) keeps only the last part of this file: one thread, and
// every loop's tasks in order on the caller.
//
// Left out on purpose: per-thread queues, and work stealing.
// Measurements: docs/kernel_notes.md.
#include "kernels/parallel.hpp"

#if QKV_THREADS
#include <pthread.h>
#include <sys/resource.h>
#endif
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace qkv::kernels {

#if QKV_THREADS
namespace {

// How long a waiting thread polls before it sleeps: longer than the gap
// between two loops of a step, short enough that a pool left idle stops
// using a core almost at once.
constexpr auto kSpin = std::chrono::microseconds(200);

// Polls done() until it is true (returns true) or kSpin has passed (false).
template <class Done>
bool spin_until(const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (done()) return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();  // tells the core this is a wait loop: frees its resources for the other hyperthread
#endif
    if (i % 64 == 63 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

// Set while this thread runs a task, so a parallel_for inside it runs inline.
thread_local bool in_task = false;

// One loop handed to the pool: lives on the stack of the thread that runs it.
struct Loop {
  Loop(void (*c)(const void*, int64_t), const void* x, int64_t n) : call(c), context(x), tasks(n) {}
  void (*call)(const void*, int64_t);
  const void* context;
  int64_t tasks;
  std::atomic<int64_t> next{0};  // the next task to claim
  std::atomic<int> workers{0};   // workers inside the loop (join under the pool's mutex)
  std::exception_ptr error;      // the first exception a task threw (under the mutex)
};

class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }

  // NOTE: joins the workers, so a program exits cleanly (and a sanitizer sees
  // no thread outlive main).
  ~ThreadPool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& w : workers_) w.join();
  }

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs the loop on the caller and whichever workers join in time; returns
  // once all tasks ran. The caller never waits for a worker that has not
  // joined: on a busy machine a woken thread may get no CPU for a while, and
  // the caller then simply runs the tasks itself.
  void run(int64_t tasks, void (*call)(const void*, int64_t), const void* context) {
    Loop loop{call, context, tasks};
    bool sleepers;
    {
      std::lock_guard lock(mutex_);
      current_ = &loop;
      generation_.fetch_add(1, std::memory_order_release);
      sleepers = sleepers_ > 0;
    }
    if (sleepers) wake_.notify_all();  // spinning workers see the generation change without it
    take_tasks(loop);
    {
      std::lock_guard lock(mutex_);
      current_ = nullptr;  // a worker arriving from now on finds no loop
    }
    auto finished = [&] { return loop.workers.load(std::memory_order_acquire) == 0; };
    if (!spin_until(finished)) {
      std::unique_lock lock(mutex_);
      done_.wait(lock, finished);
    }
    if (loop.error) std::rethrow_exception(loop.error);
  }

 private:
  // Claim and run tasks of the loop until none is left.
  void take_tasks(Loop& loop) {
    in_task = true;
    for (int64_t t; (t = loop.next.fetch_add(1, std::memory_order_relaxed)) < loop.tasks;) {
      try {
        loop.call(loop.context, t);
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!loop.error) loop.error = std::current_exception();
      }
    }
    in_task = false;
  }

  void work() {
    int64_t seen = 0;  // the last generation this worker looked at
    for (;;) {
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
      Loop* loop;
      {
        std::unique_lock lock(mutex_);
        while (!stop_ && generation_.load(std::memory_order_relaxed) == seen) {
          ++sleepers_;
          wake_.wait(lock);
          --sleepers_;
        }
        if (stop_) return;
        seen = generation_.load(std::memory_order_relaxed);
        if (!current_) continue;  // that loop is over already: wait for the next
        loop = current_;
        loop->workers.fetch_add(1, std::memory_order_relaxed);
      }
      take_tasks(*loop);
      // The last worker out wakes the caller if it sleeps. After the
      // decrement the caller may return and `loop` be gone: only the pool's
      // own members are touched from here.
      if (loop->workers.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard lock(mutex_);  // orders the notify after the caller's check of finished()
        done_.notify_one();
      }
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  Loop* current_ = nullptr;              // the loop being run, if any (under the mutex)
  std::atomic<int64_t> generation_ = 0;  // counts loops, so a worker joins each at most once
  int sleepers_ = 0;                     // workers asleep on wake_ (under the mutex)
  bool stop_ = false;                    // (under the mutex)
};

// The pool and its size. `pool_mutex` is held for a whole loop: a second
// program thread that finds it taken runs its loop alone rather than wait.
std::mutex pool_mutex;
std::unique_ptr<ThreadPool> pool;
std::atomic<int> threads_wanted{0};  // 0: not decided yet (see num_threads)
// Held while the count is decided or changed (the default count below):
// after pool_mutex when both are taken.
std::mutex count_mutex;

// --- fork ---------------------------------------------------------------------
// Before fork() the forking thread takes pool_mutex, so no loop is running
// (nor the pool being replaced) while the process is copied; the parent then
// lets go of it. The child lets go of it too (it is the thread that took
// it), and drops the pool without destroying it: its workers are threads of
// the parent. Its destructor would join them and never return, and its
// mutex may be held by a worker that was busy at the fork.
// count_mutex is taken too, so that the child does not inherit it held.
void lock_before_fork() {
  pool_mutex.lock();
  count_mutex.lock();
}
void unlock_in_parent() {
  count_mutex.unlock();
  pool_mutex.unlock();
}
void reset_in_child() {
  // NOTE: leaked on purpose, and kept reachable so a leak checker does not
  // report it: a few hundred bytes per fork of a process that had a pool.
  static auto* const abandoned = new std::vector<ThreadPool*>;
  if (pool) abandoned->push_back(pool.release());
  count_mutex.unlock();
  pool_mutex.unlock();
}

// Installs the handlers once, before the first pool is made (a process that
// never had a pool has nothing to reset).
void handle_fork() {
  static const int installed = pthread_atfork(lock_before_fork, unlock_in_parent, reset_in_child);
  (void)installed;  // fails only without memory for the handlers: then fork stays as unsafe as before
}

// --- the default count ------------------------------------------------------------
// Without QKV_NUM_THREADS or set_num_threads, the count is the cores the
// machine's other programs leave free, looked at again every second, as
// libgomp's dynamic mode (OMP_DYNAMIC) does. A worker that has to take
// turns with another program on its core holds up every loop it joined
// until it gets the core back, a time slice later (milliseconds): on a busy
// machine that made a small model twice as slow on 2 threads as on 1
// (docs/threads.md has the measurements).
using Clock = std::chrono::steady_clock;
constexpr auto kLoadEvery = std::chrono::seconds(1);
std::atomic<bool> follow_load{false};      // the count is the default one (changed under count_mutex)
std::atomic<Clock::rep> next_look{0};      // when to look at the load again (Clock ticks)
std::optional<Clock::time_point> seen_at;  // when it was last looked at (under count_mutex)
double cpu_seen = 0;                       // this process's CPU seconds then (under count_mutex)

int cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

// CPU seconds this process has run, all its threads together.
double cpu_seconds() {
  rusage use{};
  getrusage(RUSAGE_SELF, &use);
  return static_cast<double>(use.ru_utime.tv_sec + use.ru_stime.tv_sec) +
         static_cast<double>(use.ru_utime.tv_usec + use.ru_stime.tv_usec) * 1e-6;
}

// threads_for_load with the machine's 1-minute load average and the cores
// this process used since the last look. Called under count_mutex.
int count_for_load() {
  const Clock::time_point now = Clock::now();
  const double cpu = cpu_seconds();
  const double wall = seen_at ? std::chrono::duration<double>(now - *seen_at).count() : 0.0;
  const double own = wall > 0 ? (cpu - cpu_seen) / wall : 0.0;  // 0 the first time: nothing seen yet
  seen_at = now;
  cpu_seen = cpu;
  next_look = (now + kLoadEvery).time_since_epoch().count();
  double load = 0;
  if (getloadavg(&load, 1) != 1) return cores();  // no load average: every core
  return threads_for_load(cores(), load, own);
}

// QKV_NUM_THREADS if it is a count, else the default, which follows the
// load (*follows is then true). A value that is not a count is ignored with
// one warning on stderr (as OpenMP treats a bad OMP_NUM_THREADS): the
// variable is read inside whatever op first goes parallel, where an
// exception would blame that op for the environment, and the results do
// not depend on the count anyway. Called under count_mutex.
int default_threads(bool* follows) {
  *follows = false;
  const char* text = std::getenv("QKV_NUM_THREADS");
  if (text && *text) {
    try {
      return parse_num_threads(text);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "qkv: warning: ignoring %s; using the default count\n", e.what());
    }
  }
  *follows = true;
  return count_for_load();
}

// Every kLoadEvery, the default count looked at again, by the first thread
// to come by (the others go on with the count as it is).
void follow_the_load() {
  if (!follow_load.load(std::memory_order_relaxed)) return;
  if (Clock::now().time_since_epoch().count() < next_look.load(std::memory_order_relaxed)) return;
  std::unique_lock lock(count_mutex, std::try_to_lock);
  if (lock.owns_lock() && follow_load) threads_wanted = count_for_load();
}

}  // namespace
#endif  // QKV_THREADS

int parse_num_threads(const char* text) {
  char* end = nullptr;
  long n = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || n < 1 || n > 1024)
    throw std::invalid_argument(std::string("QKV_NUM_THREADS='") + text + "': expected a whole number from 1 to 1024");
  return static_cast<int>(n);
}

int threads_for_load(int cores, double load_average, double own_cores) {
  const double others = std::max(0.0, load_average - own_cores);
  // lround of a count no machine has would overflow: any count past the cores gives 1.
  if (!(others < static_cast<double>(cores))) return 1;
  return std::clamp(cores - static_cast<int>(std::lround(others)), 1, cores);
}

int64_t tasks_for(int64_t work, int64_t grain) { return work < 2 * grain ? 1 : work / grain; }

#if QKV_THREADS
int num_threads() {
  if (int n = threads_wanted.load(); n > 0) return n;
  std::lock_guard lock(count_mutex);
  if (threads_wanted.load() == 0) {  // unless another thread, or set_num_threads, came first
    bool follows = false;
    threads_wanted = default_threads(&follows);
    follow_load = follows;
  }
  return threads_wanted.load();
}

int available_threads() { return in_task ? 1 : num_threads(); }

void set_num_threads(int n) {
  if (n < 1 || n > 1024)
    throw std::invalid_argument("set_num_threads(" + std::to_string(n) + "): expected a count from 1 to 1024");
  std::lock_guard lock(pool_mutex);  // waits for a running loop to finish
  {
    std::lock_guard count_lock(count_mutex);
    follow_load = false;
    threads_wanted = n;
  }
  pool.reset();  // joins the old workers
}

void run_tasks(int64_t tasks, void (*call)(const void*, int64_t), const void* context) {
  if (tasks > 1 && !in_task) follow_the_load();
  if (tasks > 1 && available_threads() > 1) {
    std::unique_lock lock(pool_mutex, std::try_to_lock);
    if (lock.owns_lock()) {
      const int n = threads_wanted.load();
      handle_fork();
      if (!pool || pool->size() != n) pool = std::make_unique<ThreadPool>(n);
      pool->run(tasks, call, context);
      return;
    }
  }
  // One thread (or a loop inside a task, or the pool busy with another
  // thread's loop): the tasks in order, here.
  for (int64_t t = 0; t < tasks; ++t) call(context, t);
}

#else  // no threads: one thread, always

int num_threads() { return 1; }

int available_threads() { return 1; }

void set_num_threads(int n) {
  if (n != 1)
    throw std::invalid_argument("set_num_threads(" + std::to_string(n) +
                                "): this build of qkv has no threads (QKV_THREADS=OFF): the only count is 1");
}

void run_tasks(int64_t tasks, void (*call)(const void*, int64_t), const void* context) {
  for (int64_t t = 0; t < tasks; ++t) call(context, t);
}

#endif  // QKV_THREADS

}  // namespace qkv::kernels

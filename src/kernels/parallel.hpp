// The kernels' thread pool: run a loop's iterations on several threads.
//
//   parallel_for(tasks, [&](int64_t t) { … task t … });
//
// runs task(0) … task(tasks - 1), each exactly once, on the calling thread and
// the pool's workers, and returns when all are done. Which thread runs which
// task is left to chance, so a kernel stays deterministic by giving every task
// its own outputs and cutting the work into tasks the same way whatever the
// thread count: each output is then computed by one thread, in one order, and
// the result does not depend on how many threads there are (see GEMM's and
// the reductions' NOTEs).
//
// Left out on purpose: nested parallelism (a parallel_for inside a task runs
// its tasks one after another on that thread, as does one called while another
// thread of the program has the pool), work stealing and thread affinity.
#pragma once
#include <cstdint>

namespace qkv::kernels {

// Threads the kernels run on (the caller and num_threads() - 1 workers). Until
// set_num_threads is called: QKV_NUM_THREADS from the environment, else the
// default, which follows the machine's load: threads_for_load below, looked
// at again every second.
int num_threads();

// The default count: the cores the machine's other programs leave free,
// within [1, cores]. load_average: the machine's 1-minute load average (it
// counts this process too); own_cores: the cores this process kept busy
// lately (its CPU time over the wall time).
//   threads = cores − round(load_average − own_cores)
int threads_for_load(int cores, double load_average, double own_cores);

// Use n ≥ 1 threads from now on (std::invalid_argument otherwise). The
// workers of the old pool are joined first; new ones start when next needed.
void set_num_threads(int n);

// QKV_NUM_THREADS's value as a thread count: a whole number ≥ 1, or
// std::invalid_argument naming the text.
int parse_num_threads(const char* text);

// The threads a loop started here would run on: 1 inside a task of another
// loop (it would run inline), else num_threads(). Kernels that choose how to
// cut their work by the thread count ask this.
int available_threads();

// call(context, t) for every t in [0, tasks), spread over the threads;
// returns when all are done. An exception a task throws is rethrown here (the
// first one, once the other tasks have run). parallel_for below is the way in.
void run_tasks(int64_t tasks, void (*call)(const void* context, int64_t t), const void* context);

// task(t) for every t in [0, tasks), spread over the threads. The task is
// passed on by address, not copied into a std::function (which allocates),
// and a single task runs right here: a loop of one costs a call.
template <class Task>
void call_task(const void* task, int64_t t) {
  (*static_cast<const Task*>(task))(t);
}

template <class Task>
void parallel_for(int64_t tasks, const Task& task) {
  if (tasks == 1) return task(0);
  run_tasks(tasks, call_task<Task>, &task);
}

// How many tasks of `grain` units of work it pays to cut `work` units into:
// 1 (no threads) below two grains, never more than the whole grains in work.
// Kernels size a task so that it takes far longer than waking a worker
// (tens of microseconds).
int64_t tasks_for(int64_t work, int64_t grain);

// f(begin, end) over pieces [begin, end) that cover [0, n), on the threads:
// tasks_for(n, grain) pieces of nearly equal size, each starting at a
// multiple of `align` (a kernel's SIMD width, so that only the array's own
// last n mod W elements take a scalar tail). For a kernel that computes each
// element alone, whatever the cut gives the same result.
//
// For kernels that compute rows alone (softmax, LayerNorm, cross-entropy),
// n is the row count and align 1; the grain in rows is rows_grain below.
template <class F>
void parallel_ranges(int64_t n, int64_t grain, int64_t align, const F& f) {
  const int64_t tasks = tasks_for(n, grain), units = (n + align - 1) / align;
  parallel_for(tasks, [&](int64_t t) {
    const int64_t begin = units * t / tasks * align, end = units * (t + 1) / tasks * align;
    f(begin, end < n ? end : n);
  });
}

// Rows of `row_length` floats a task should take so that it gets at least
// `grain` floats (and at least one row).
inline int64_t rows_grain(int64_t grain, int64_t row_length) {
  return row_length >= grain ? 1 : grain / (row_length > 0 ? row_length : 1);
}

}  // namespace qkv::kernels

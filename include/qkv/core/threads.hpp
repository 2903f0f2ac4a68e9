// How many threads qkv's kernels run on, as torch.set_num_threads does.
//
// Large matrix products (matmul, bmm, Linear), large elementwise ops and
// large reductions split their work over a pool of threads; small ones stay
// on the calling thread, where waking a worker would cost more than it saves.
// The default is the QKV_NUM_THREADS environment variable if it is set, else
// the number of cores.
//
// NOTE: results are the same bit for bit whatever the count. Every output
// element is computed by one thread, in one order, and a reduction is cut
// into pieces of a fixed size (not one per thread) that are combined in a
// fixed order. So a run on 1 thread and on 4 prints the same numbers.
#pragma once

namespace qkv {

// Run the kernels on n ≥ 1 threads (the caller and n - 1 workers) from now
// on. Throws qkv::Error for n < 1 (or above 1024), and for n > 1 in a build
// without threads (QKV_THREADS=OFF, the WebAssembly build: always 1).
void set_num_threads(int n);

// The number of threads the kernels run on: set_num_threads's, else
// QKV_NUM_THREADS if it is a whole number from 1 to 1024 (any other value is
// ignored with a warning on stderr), else the number of cores.
int get_num_threads();

}  // namespace qkv

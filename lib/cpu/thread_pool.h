// The CPU backend's own worker threads. OpenBLAS is kept single-threaded
// (its threaded sgemm allocates on every call and its threads would fight
// ours for the cores); work is split here instead, statically, so results
// are deterministic for a fixed thread count.
#pragma once

#include <stdint.h>

namespace snn {

// fn(ctx, worker, workers) runs once for every worker in [0, workers), on
// the calling thread (worker 0) and on pool threads. Returns when all are
// done. Never allocates after the pool has grown to `workers` threads.
using WorkerFn = void (*)(void *ctx, int32_t worker, int32_t workers);
void parallel_run(int32_t workers, WorkerFn fn, void *ctx);

// The thread bound set by snn_set_num_threads (at least 1).
int32_t cpu_threads();

// Grows the pool to n - 1 threads ahead of time (called when the thread
// bound is set, so the training loop never creates threads).
void thread_pool_reserve(int32_t n);

// Splits [0, total) into `parts` contiguous ranges, the first ones longer
// by one, and returns range `part` as [*begin, *end).
inline void split_range(int64_t total, int32_t parts, int32_t part, int64_t *begin, int64_t *end) {
    int64_t base = total / parts, extra = total % parts;
    *begin = part * base + (part < extra ? part : extra);
    *end = *begin + base + (part < extra ? 1 : 0);
}

}  // namespace snn

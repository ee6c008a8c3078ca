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

// Elements of an element-wise pass (an activation, its derivative, an add)
// below which splitting it costs more than it saves: waking the pool and
// waiting for it take a few microseconds.
constexpr int64_t kElementGrain = 16384;

// fn(begin, end) over [0, n) split across the pool: into as many ranges as
// there are threads, but none under `grain` items (so small spans run on
// the caller alone), each a multiple of `align` items but the last. For
// element-wise and per-row passes, whose results then do not depend on the
// thread count. Allocates nothing.
template <class Fn>
void parallel_ranges(int64_t n, int64_t grain, int64_t align, const Fn &fn) {
    const int64_t most = grain > 0 ? n / grain : n;
    const int32_t workers = int32_t(most < cpu_threads() ? most : cpu_threads());
    if (workers <= 1) {
        if (n > 0) fn(int64_t(0), n);
        return;
    }
    struct Job {
        const Fn *fn;
        int64_t n, align;
    } job{&fn, n, align};
    parallel_run(
        workers,
        [](void *ctx, int32_t worker, int32_t count) {
            const Job &j = *static_cast<const Job *>(ctx);
            int64_t first, last;
            split_range((j.n + j.align - 1) / j.align, count, worker, &first, &last);
            first *= j.align;
            last = last * j.align < j.n ? last * j.align : j.n;
            if (first < last) (*j.fn)(first, last);
        },
        &job);
}

}  // namespace snn

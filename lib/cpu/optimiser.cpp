// Optimiser updates on the CPU: loops over engine/math.h.
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "cpu/cpu_backend.h"
#include "cpu/multiversion.h"
#include "cpu/thread_pool.h"

namespace snn {

namespace {

// One loop per optimiser over its math.h update. __restrict: parameters,
// gradient and state never overlap, so the loops vectorise; each is
// compiled for AVX2 and the baseline.
using OptLoop = void (*)(const OptStep s, size_t count, float *__restrict p,
                         const float *__restrict g, float *__restrict m, float *__restrict v);

SNN_MULTIVERSION
void sgd_loop(const OptStep s, size_t count, float *__restrict p, const float *__restrict g,
              float *__restrict m, float *__restrict) {
    for (size_t i = 0; i < count; ++i) sgd_update(s, p + i, g[i], m + i, nullptr);
}

SNN_MULTIVERSION
void adam_loop(const OptStep s, size_t count, float *__restrict p, const float *__restrict g,
               float *__restrict m, float *__restrict v) {
    for (size_t i = 0; i < count; ++i) adam_update(s, p + i, g[i], m + i, v + i);
}

SNN_MULTIVERSION
void adamw_loop(const OptStep s, size_t count, float *__restrict p, const float *__restrict g,
                float *__restrict m, float *__restrict v) {
    for (size_t i = 0; i < count; ++i) adamw_update(s, p + i, g[i], m + i, v + i);
}

SNN_MULTIVERSION
void rmsprop_loop(const OptStep s, size_t count, float *__restrict p, const float *__restrict g,
                  float *__restrict, float *__restrict v) {
    for (size_t i = 0; i < count; ++i) rmsprop_update(s, p + i, g[i], nullptr, v + i);
}

SNN_MULTIVERSION
void lion_loop(const OptStep s, size_t count, float *__restrict p, const float *__restrict g,
               float *__restrict m, float *__restrict) {
    for (size_t i = 0; i < count; ++i) lion_update(s, p + i, g[i], m + i, nullptr);
}

const OptLoop kLoops[] = {
#define SNN_CPU_OPTIMISER_ENTRY(name, id) &name##_loop,
    SNN_OPTIMISER_LIST(SNN_CPU_OPTIMISER_ENTRY)
#undef SNN_CPU_OPTIMISER_ENTRY
};

static_assert(sizeof(kLoops) / sizeof(kLoops[0]) == kOptimiserCount, "one loop per optimiser");

// Moments of parameters whose gradient stays zero (dead units, constant
// pixels) decay into subnormal floats, which cost the processor microcode
// assists on every step. The update runs with subnormals flushed to zero.
class FlushSubnormals {
public:
#if defined(__SSE__) || defined(__x86_64__)
    FlushSubnormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040); }  // FTZ | DAZ
    ~FlushSubnormals() { _mm_setcsr(saved_); }

private:
    unsigned int saved_;
#endif
};

struct OptJob {
    OptLoop loop;
    const OptStep *step;
    size_t count;
    float *p;
    const float *g;
    float *m, *v;
};

// Each worker updates its own contiguous slice (element-wise, so the split
// does not change any result).
void optimiser_worker(void *ctx, int32_t worker, int32_t workers) {
    const OptJob &j = *static_cast<const OptJob *>(ctx);
    int64_t b, e;
    split_range(int64_t(j.count), workers, worker, &b, &e);
    const size_t n = size_t(e - b);
    float *m = j.m ? j.m + b : nullptr, *v = j.v ? j.v + b : nullptr;
    FlushSubnormals flush;
    j.loop(*j.step, n, j.p + b, j.g + b, m, v);
}

// Parameters per worker below which one thread does the update.
constexpr size_t kParallelUpdate = size_t(1) << 15;

}  // namespace

void CpuBackend::optimiser_step(Stream *, OptKind kind, const OptStep &step, size_t count,
                                float *p, const float *g, float *m, float *v) {
    OptJob job{kLoops[size_t(kind)], &step, count, p, g, m, v};
    size_t workers = count / kParallelUpdate;
    if (workers > size_t(cpu_threads())) workers = size_t(cpu_threads());
    parallel_run(workers < 1 ? 1 : int32_t(workers), optimiser_worker, &job);
}

}  // namespace snn

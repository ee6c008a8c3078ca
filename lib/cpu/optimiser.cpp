// Optimiser updates on the CPU: loops over core/math.h.
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include <cmath>

#include "cpu/cpu_backend.h"
#include "cpu/multiversion.h"
#include "cpu/reduce.h"
#include "cpu/thread_pool.h"

namespace snn {

namespace {

// One loop per optimiser over its math.h update. __restrict: parameters,
// gradient and state never overlap, so the loops vectorise; each is
// compiled for AVX2 and the baseline.
// coef scales the gradient (clipping by its norm; 1 otherwise, which
// changes nothing: 1 * g is g).
using OptLoop = void (*)(const OptStep s, float coef, size_t count, float *__restrict p,
                         const float *__restrict g, float *__restrict m, float *__restrict v);

SNN_MULTIVERSION
void sgd_loop(const OptStep s, float coef, size_t count, float *__restrict p,
              const float *__restrict g, float *__restrict m, float *__restrict) {
    for (size_t i = 0; i < count; ++i) sgd_update(s, p + i, coef * g[i], m + i, nullptr);
}

SNN_MULTIVERSION
void adam_loop(const OptStep s, float coef, size_t count, float *__restrict p,
               const float *__restrict g, float *__restrict m, float *__restrict v) {
    for (size_t i = 0; i < count; ++i) adam_update(s, p + i, coef * g[i], m + i, v + i);
}

SNN_MULTIVERSION
void adamw_loop(const OptStep s, float coef, size_t count, float *__restrict p,
                const float *__restrict g, float *__restrict m, float *__restrict v) {
    for (size_t i = 0; i < count; ++i) adamw_update(s, p + i, coef * g[i], m + i, v + i);
}

SNN_MULTIVERSION
void rmsprop_loop(const OptStep s, float coef, size_t count, float *__restrict p,
                  const float *__restrict g, float *__restrict, float *__restrict v) {
    for (size_t i = 0; i < count; ++i) rmsprop_update(s, p + i, coef * g[i], nullptr, v + i);
}

SNN_MULTIVERSION
void lion_loop(const OptStep s, float coef, size_t count, float *__restrict p,
               const float *__restrict g, float *__restrict m, float *__restrict) {
    for (size_t i = 0; i < count; ++i) lion_update(s, p + i, coef * g[i], m + i, nullptr);
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
    float coef;
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
    j.loop(*j.step, j.coef, n, j.p + b, j.g + b, m, v);
}

// The gradient's L2 norm for clipping: sums of squares in double over
// kNormChunks fixed slices (each in the fixed order of lane_sum), added in
// slice order, so the norm does not depend on the number of threads.
constexpr int32_t kNormChunks = 64;

SNN_MULTIVERSION
double sum_of_squares(const float *__restrict g, int64_t n) {
    return lane_sum<double, 8>(n, [&](int64_t i) {
        const double x = g[i];
        return x * x;
    });
}

struct NormJob {
    const float *g;
    size_t count;
    double sums[kNormChunks];
};

void norm_worker(void *ctx, int32_t worker, int32_t workers) {
    NormJob &j = *static_cast<NormJob *>(ctx);
    int64_t first, last;
    split_range(kNormChunks, workers, worker, &first, &last);
    for (int64_t c = first; c < last; ++c) {
        int64_t b, e;
        split_range(int64_t(j.count), kNormChunks, int32_t(c), &b, &e);
        j.sums[c] = sum_of_squares(j.g + b, e - b);
    }
}

// Parameters per worker below which one thread does the update.
constexpr size_t kParallelUpdate = size_t(1) << 15;

}  // namespace

void CpuBackend::optimiser_step(Stream *, OptKind kind, const OptStep &step, size_t count,
                                float *p, const float *g, float *m, float *v, double *norm) {
    size_t workers = count / kParallelUpdate;
    if (workers > size_t(cpu_threads())) workers = size_t(cpu_threads());
    const int32_t n = workers < 1 ? 1 : int32_t(workers);
    float coef = 1.0f;
    if (norm != nullptr) {
        NormJob job{g, count, {}};
        parallel_run(n, norm_worker, &job);
        double sum = 0.0;
        for (double chunk : job.sums) sum += chunk;
        norm[0] = std::sqrt(sum);
        coef = clip_coefficient(step.max_grad_norm, norm[0]);
    }
    OptJob job{kLoops[size_t(kind)], coef, &step, count, p, g, m, v};
    parallel_run(n, optimiser_worker, &job);
}

}  // namespace snn

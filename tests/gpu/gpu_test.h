// Helpers of the GPU tests: checks that count failures, exit code 77 (Meson's
// "skipped") without a GPU (gpu_skip.h says when), owning handles,
// reproducible random data, and element-wise comparisons with tolerances
// suited to fp32.
//
// Every GPU test compares the GPU against the CPU backend. Run with the
// environment variable SNN_TEST_GPU_AS_CPU set to exactly "1" (as the device
// suite does, and only it), the "GPU" side stays on the CPU too: the
// comparisons then hold exactly, which checks the tests themselves on
// machines without a GPU. Any other value, or none, runs on the GPU.
#pragma once

#include <snn.h>

#include "../common/handles.h"
#include "gpu_skip.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace gpu_test {

inline int &failures() {
    static int n = 0;
    return n;
}

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            std::fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            ++gpu_test::failures();                                                       \
        }                                                                                 \
    } while (0)

// An snn call that must succeed; prints snn_last_error() otherwise.
#define CHECK_OK(call)                                                                          \
    do {                                                                                        \
        snn_status st_ = (call);                                                                \
        if (st_ != SNN_OK) {                                                                    \
            std::fprintf(stderr, "%s:%d: %s returned %d (%s): %s\n", __FILE__, __LINE__, #call, \
                         st_, snn_status_string(st_), snn_last_error());                        \
            ++gpu_test::failures();                                                             \
        }                                                                                       \
    } while (0)

// An snn call that must fail with `status`.
#define CHECK_STATUS(call, status)                                                                 \
    do {                                                                                           \
        snn_status st_ = (call);                                                                   \
        if (st_ != (status)) {                                                                     \
            std::fprintf(stderr, "%s:%d: %s returned %d (%s), expected %s: %s\n", __FILE__,        \
                         __LINE__, #call, st_, snn_status_string(st_), #status, snn_last_error()); \
            ++gpu_test::failures();                                                                \
        }                                                                                          \
    } while (0)

inline bool gpu_as_cpu() {
    const char *v = std::getenv("SNN_TEST_GPU_AS_CPU");
    return v != nullptr && std::strcmp(v, "1") == 0;
}

// The device the tests put the "GPU" side on: GPU 0, or the CPU in the
// self-check mode. Exits with 77 (skip) when there is no GPU and the library
// says why, with 1 when it cannot say why (gpu_skip.h).
inline int32_t test_device() {
    if (gpu_as_cpu()) {
        std::printf("self-check: the GPU side runs on the CPU (SNN_TEST_GPU_AS_CPU=1)\n");
        return SNN_DEVICE_CPU;
    }
    gpu_skip_unless_gpu();
    return 0;
}

// Moves a model to `device` (a no-op for SNN_DEVICE_CPU).
inline void move_to(snn_model *m, int32_t device) {
    if (device == SNN_DEVICE_CPU)
        CHECK_OK(snn_to_cpu(m));
    else
        CHECK_OK(snn_to_gpu(m, device));
}

inline int finish(const char *name) {
    if (failures() == 0) {
        std::printf("%s: all checks passed\n", name);
        return 0;
    }
    std::printf("%s: %d checks failed\n", name, failures());
    return 1;
}

using snn_handles::Backward;
using snn_handles::Dataset;
using snn_handles::Forward;
using snn_handles::Model;
using snn_handles::Optimiser;

inline Model make_model(const char *spec, uint64_t seed) {
    snn_model *m = nullptr;
    CHECK_OK(snn_model_create(spec, &m));
    if (m == nullptr) {
        std::fprintf(stderr, "cannot continue without the model \"%s\"\n", spec);
        std::exit(1);
    }
    CHECK_OK(snn_model_init(m, seed));
    return Model(m);
}

inline Forward make_forward(const snn_model *m, int64_t max_batch) {
    snn_forward_cache *c = nullptr;
    CHECK_OK(snn_preallocate(m, max_batch, &c));
    return Forward(c);
}

inline Backward make_backward(const snn_model *m, int64_t max_batch) {
    snn_backward_cache *c = nullptr;
    CHECK_OK(snn_preallocate_grads(m, max_batch, &c));
    return Backward(c);
}

inline Optimiser make_optimiser(const snn_model *m, snn_optimiser_kind kind) {
    snn_optimiser *o = nullptr;
    CHECK_OK(snn_optimiser_create(m, kind, &o));
    return Optimiser(o);
}

inline size_t param_count(const snn_model *m) {
    size_t n = 0;
    CHECK_OK(snn_parameter_count(m, &n));
    return n;
}
inline size_t input_size(const snn_model *m) {
    size_t n = 0;
    CHECK_OK(snn_model_input_size(m, &n));
    return n;
}
inline size_t output_size(const snn_model *m) {
    size_t n = 0;
    CHECK_OK(snn_model_output_size(m, &n));
    return n;
}

inline std::vector<float> parameters(const snn_model *m) {
    std::vector<float> p(param_count(m));
    CHECK_OK(snn_get_parameters(m, p.data(), p.size()));
    return p;
}

inline std::vector<float> state_of(const snn_model *m) {
    size_t n = 0;
    CHECK_OK(snn_state_count(m, &n));
    std::vector<float> s(n);
    if (n) CHECK_OK(snn_get_state(m, s.data(), n));
    return s;
}

inline std::vector<float> outputs_of(const snn_forward_cache *f, size_t count) {
    std::vector<float> y(count);
    CHECK_OK(snn_get_outputs(f, y.data(), count));
    return y;
}

inline std::vector<float> gradients_of(const snn_backward_cache *b, size_t count) {
    std::vector<float> g(count);
    CHECK_OK(snn_get_gradients(b, g.data(), count));
    return g;
}

// A small reproducible generator (splitmix64), independent of the platform.
class Random {
public:
    explicit Random(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // Uniform in [lo, hi).
    float uniform(float lo, float hi) {
        return lo + (hi - lo) * float(next() >> 40) * (1.0f / 16777216.0f);
    }
    std::vector<float> floats(size_t n, float lo, float hi) {
        std::vector<float> v(n);
        for (float &x : v) x = uniform(lo, hi);
        return v;
    }
    std::vector<int32_t> labels(size_t n, int32_t classes) {
        std::vector<int32_t> v(n);
        for (int32_t &x : v) x = int32_t(next() % uint64_t(classes));
        return v;
    }

private:
    uint64_t state_;
};

// Checks |got[i] - want[i]| <= atol + rtol * |want[i]| for every element i,
// each against its own value: a small element is held to its own precision,
// however large its neighbours. atol covers elements that are sums of terms
// cancelling to near zero, where the order of the sums (cuBLAS, cuDNN
// against OpenBLAS and loops) decides the last bits. NaN never passes.
// Reports the element furthest outside its tolerance and how many are out.
inline bool close(const char *what, const std::vector<float> &got, const std::vector<float> &want,
                  float rtol, float atol) {
    if (got.size() != want.size()) {
        std::fprintf(stderr, "%s: %zu values, expected %zu\n", what, got.size(), want.size());
        ++failures();
        return false;
    }
    size_t outside = 0, worst_at = 0;
    double worst = 0.0;  // the largest error / tolerance
    for (size_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs(double(got[i]) - double(want[i]));
        const double tol = double(atol) + double(rtol) * std::fabs(double(want[i]));
        if (err <= tol) continue;  // false for NaN
        ++outside;
        const double ratio = std::isnan(err) ? INFINITY : err / tol;
        if (outside == 1 || ratio > worst) {
            worst = ratio;
            worst_at = i;
        }
    }
    if (outside > 0) {
        const double tol = double(atol) + double(rtol) * std::fabs(double(want[worst_at]));
        std::fprintf(stderr,
                     "%s: %zu of %zu elements outside the tolerance; element %zu is %.9g, "
                     "expected %.9g (error %.3g > tolerance %.3g = %.3g + %.3g * |expected|)\n",
                     what, outside, got.size(), worst_at, got[worst_at], want[worst_at],
                     std::fabs(double(got[worst_at]) - double(want[worst_at])), tol, double(atol),
                     double(rtol));
        ++failures();
        return false;
    }
    return true;
}

inline bool close(const char *what, float got, float want, float rtol, float atol) {
    return close(what, std::vector<float>{got}, std::vector<float>{want}, rtol, atol);
}

}  // namespace gpu_test

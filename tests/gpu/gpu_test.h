// Helpers of the GPU tests: checks that count failures, exit code 77 (Meson's
// "skipped") without a GPU, owning handles, reproducible random data, and
// comparisons with tolerances suited to fp32.
//
// Every GPU test compares the GPU against the CPU backend. Run with the
// environment variable SNN_TEST_GPU_AS_CPU=1, the "GPU" side stays on the
// CPU too: the comparisons then hold exactly, which checks the tests
// themselves on machines without a GPU.
#pragma once

#include <snn.h>

#include "../common/handles.h"

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
// self-check mode. Exits with 77 (skip) when there is no GPU.
inline int32_t test_device() {
    if (gpu_as_cpu()) return SNN_DEVICE_CPU;
    if (snn_gpu_count() == 0) {
        snn_status st = snn_gpu_status(0);
        std::printf("skipped: no usable GPU (%s: %s)\n", snn_status_string(st), snn_last_error());
        std::exit(77);
    }
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

// Checks |got - want| <= rtol * max(|want|) + atol for every element: the
// error is measured against the scale of the whole reference, as sums in a
// different order (cuBLAS, cuDNN) differ by rounding relative to that scale.
inline bool close(const char *what, const std::vector<float> &got, const std::vector<float> &want,
                  float rtol, float atol) {
    if (got.size() != want.size()) {
        std::fprintf(stderr, "%s: %zu values, expected %zu\n", what, got.size(), want.size());
        ++failures();
        return false;
    }
    float scale = 0.0f;
    for (float w : want) scale = std::fmax(scale, std::fabs(w));
    const float tol = rtol * scale + atol;
    float worst = 0.0f;
    size_t worst_at = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        float err = std::fabs(got[i] - want[i]);
        if (!(err <= worst) || std::isnan(got[i])) {  // NaN counts as worst
            worst = std::isnan(err) ? INFINITY : err;
            worst_at = i;
        }
    }
    if (!(worst <= tol)) {
        std::fprintf(stderr,
                     "%s: element %zu is %.9g, expected %.9g (error %.3g > tolerance %.3g)\n", what,
                     worst_at, got[worst_at], want[worst_at], worst, tol);
        ++failures();
        return false;
    }
    return true;
}

inline bool close(const char *what, float got, float want, float rtol, float atol) {
    return close(what, std::vector<float>{got}, std::vector<float>{want}, rtol, atol);
}

}  // namespace gpu_test

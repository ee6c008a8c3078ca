// Small helpers shared by the unit tests: owning wrappers for the C handles,
// a reproducible random source, and one-line forward/backward calls.
#pragma once

#include <gtest/gtest.h>
#include <snn.h>

#include "../common/handles.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#ifdef _WIN32
#include <stdlib.h>
// POSIX's setenv and unsetenv through the C runtime's environment, which
// snn.dll's getenv reads too.
inline int setenv(const char *name, const char *value, int) { return _putenv_s(name, value); }
inline int unsetenv(const char *name) { return _putenv_s(name, ""); }
#endif

namespace snn_test {

using snn_handles::Backward;
using snn_handles::Forward;
using snn_handles::Model;
using snn_handles::Optimiser;

// Creates a model; a spec that does not parse fails the current test.
inline Model make_model(const std::string &spec) {
    snn_model *m = nullptr;
    EXPECT_EQ(snn_model_create(spec.c_str(), &m), SNN_OK) << spec << ": " << snn_last_error();
    return Model(m);
}

inline Forward make_forward(const snn_model *m, int64_t max_batch) {
    snn_forward_cache *c = nullptr;
    EXPECT_EQ(snn_preallocate(m, max_batch, &c), SNN_OK) << snn_last_error();
    return Forward(c);
}

inline Backward make_backward(const snn_model *m, int64_t max_batch) {
    snn_backward_cache *c = nullptr;
    EXPECT_EQ(snn_preallocate_grads(m, max_batch, &c), SNN_OK) << snn_last_error();
    return Backward(c);
}

inline Optimiser make_optimiser(const snn_model *m, snn_optimiser_kind kind) {
    snn_optimiser *o = nullptr;
    EXPECT_EQ(snn_optimiser_create(m, kind, &o), SNN_OK) << snn_last_error();
    return Optimiser(o);
}

inline size_t param_count(const snn_model *m) {
    size_t n = 0;
    EXPECT_EQ(snn_parameter_count(m, &n), SNN_OK);
    return n;
}
inline size_t input_size(const snn_model *m) {
    size_t n = 0;
    EXPECT_EQ(snn_model_input_size(m, &n), SNN_OK);
    return n;
}
inline size_t output_size(const snn_model *m) {
    size_t n = 0;
    EXPECT_EQ(snn_model_output_size(m, &n), SNN_OK);
    return n;
}

inline std::vector<float> get_params(const snn_model *m) {
    std::vector<float> p(param_count(m));
    EXPECT_EQ(snn_get_parameters(m, p.data(), p.size()), SNN_OK);
    return p;
}

// |numeric - analytic| within 1% of the larger, plus a floor for gradients
// near zero (float outputs limit the difference quotient to about 1e-4).
// Returns the error as a fraction of that tolerance.
inline double expect_gradient_close(const char *what, size_t index, double numeric, double analytic) {
    const double tol = 1e-2 * std::max(std::fabs(numeric), std::fabs(analytic)) + 2e-4;
    EXPECT_NEAR(analytic, numeric, tol) << what << " " << index;
    return std::fabs(analytic - numeric) / tol;
}

// The model's state (batchnorm's running statistics), copied.
inline std::vector<float> get_state(const snn_model *m) {
    size_t count = 0;
    EXPECT_EQ(snn_state_count(m, &count), SNN_OK);
    std::vector<float> s(count);
    EXPECT_EQ(snn_get_state(m, s.data(), s.size()), SNN_OK);
    return s;
}

inline std::string describe(const snn_model *m) {
    size_t length = 0;
    EXPECT_EQ(snn_model_describe(m, nullptr, 0, &length), SNN_OK);
    std::string s(length + 1, '\0');
    EXPECT_EQ(snn_model_describe(m, &s[0], s.size(), &length), SNN_OK);
    s.resize(length);
    return s;
}

// Sets the inputs, runs the model and returns the outputs.
inline std::vector<float> run(snn_forward_cache *c, const snn_model *m, const std::vector<float> &x) {
    EXPECT_EQ(snn_set_inputs(c, x.data(), x.size()), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_forward(c, m), SNN_OK) << snn_last_error();
    int64_t batch = 0, max_batch = 0;
    EXPECT_EQ(snn_cache_batch(c, &batch, &max_batch), SNN_OK);
    std::vector<float> y(size_t(batch) * output_size(m));
    EXPECT_EQ(snn_get_outputs(c, y.data(), y.size()), SNN_OK) << snn_last_error();
    return y;
}

inline std::vector<float> gradients(const snn_backward_cache *b, const snn_model *m) {
    std::vector<float> g(param_count(m));
    EXPECT_EQ(snn_get_gradients(b, g.data(), g.size()), SNN_OK) << snn_last_error();
    return g;
}

// A reproducible source of floats, identical on every platform.
class Random {
public:
    explicit Random(uint64_t seed) : state_(seed * 2862933555777941757ull + 3037000493ull) {}
    // Uniform in [lo, hi).
    float uniform(float lo, float hi) {
        state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
        const double u = double(state_ >> 11) * (1.0 / 9007199254740992.0);
        return float(lo + (hi - lo) * u);
    }
    std::vector<float> uniform_vector(size_t n, float lo, float hi) {
        std::vector<float> v(n);
        for (float &x : v) x = uniform(lo, hi);
        return v;
    }

private:
    uint64_t state_;
};

}  // namespace snn_test

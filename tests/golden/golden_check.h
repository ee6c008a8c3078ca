// Whether snn's replay of a golden case (golden_case.h) matches PyTorch's
// values, as gtest assertions: shared by the golden suite (test_golden.cpp)
// and the op harness (tests/ops), so both hold the same tolerances.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <iomanip>
#include <string>
#include <vector>

#include "golden_case.h"

namespace golden {

// Tolerances for float32, per element: single results, and the parameters
// after five steps (Adam's first steps divide by sqrt(v), amplifying
// rounding). The absolute part is below the tiny gradients of saturated
// tanh (4.8e-7 at |z| = 8) and the cross-entropy of a confident row
// (6.1e-7). A case may give a stricter absolute tolerance (its reference
// computed in double), and stricter ones still for single arrays. The state
// after the steps (running statistics of batch statistics drawn from the
// stepped parameters) is held as the parameters after the steps.
constexpr double kRel = 1e-5, kAbs = 1e-7;
constexpr double kStepsRel = 1e-4, kStepsAbs = 1e-6;

inline void expect_close(const char *what, const std::vector<float> &actual, const std::vector<double> &expected,
                         double rel, double abs) {
    ASSERT_EQ(actual.size(), expected.size()) << what;
    Comparison c = compare(actual, expected, rel, abs);
    std::printf("  %-20s %6zu values, max abs error %.3g\n", what, expected.size(), c.max_abs_error);
    EXPECT_EQ(c.failures, 0u) << what << ": " << c.failures << " of " << expected.size()
                              << " values off; worst at " << c.worst_index << ": snn " << std::setprecision(9)
                              << actual[c.worst_index] << ", PyTorch " << expected[c.worst_index];
}

// The outputs, the loss, the gradients of the parameters and the inputs,
// and the parameters and state after the case's steps.
inline void expect_matches_pytorch(const GoldenCase &g, const Replay &r) {
    ASSERT_EQ(r.error, "");
    expect_close("outputs", r.outputs, g.arrays.at("outputs"), kRel, g.abs_tolerance_of("outputs", kAbs));
    expect_close("loss", {r.loss}, g.arrays.at("loss_value"), kRel, g.abs_tolerance_of("loss_value", kAbs));
    expect_close("gradients", r.gradients, g.arrays.at("gradients"), kRel, g.abs_tolerance_of("gradients", kAbs));
    if (!g.arrays.count("tokens"))  // token ids have no gradient
        expect_close("input gradients", r.input_gradients, g.arrays.at("input_gradients"), kRel,
                     g.abs_tolerance_of("input_gradients", kAbs));
    expect_close("params after steps", r.params_after_steps, g.arrays.at("params_after_steps"), kStepsRel,
                 kStepsAbs);
    if (g.arrays.count("state_after_steps"))
        expect_close("state after steps", r.state_after_steps, g.arrays.at("state_after_steps"), kStepsRel,
                     kStepsAbs);
    if (g.arrays.count("grad_norm"))  // clip_grad_norm_'s value at the last step
        expect_close("gradient norm", r.grad_norm, g.arrays.at("grad_norm"), kRel, 0.0);
}

}  // namespace golden

// Golden tests: every case in data/ (written by generate.py from PyTorch)
// is replayed through the C API, in the forward cache's mode the case names
// (training unless it says eval) and from the state it gives. The forward
// outputs, the loss, the gradient of every parameter and of the inputs, and
// the parameters and the state (running statistics) after the case's
// optimiser steps (five unless it says) must match PyTorch's results.
//
// Usage: test_golden <data directory>
#include <gtest/gtest.h>
#include <snn.h>

#include "golden_case.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <string>
#include <vector>

namespace {

using namespace golden;

std::string g_data_dir;

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

class Golden : public ::testing::TestWithParam<std::string> {
protected:
    void expect_close(const char *what, const std::vector<float> &actual,
                      const std::vector<double> &expected, double rel, double abs) {
        ASSERT_EQ(actual.size(), expected.size()) << what;
        Comparison c = compare(actual, expected, rel, abs);
        std::printf("  %-20s %6zu values, max abs error %.3g\n", what, expected.size(),
                    c.max_abs_error);
        EXPECT_EQ(c.failures, 0u) << what << ": " << c.failures << " of " << expected.size()
                                  << " values off; worst at " << c.worst_index << ": snn "
                                  << std::setprecision(9)
                                  << actual[c.worst_index] << ", PyTorch "
                                  << expected[c.worst_index];
    }
};

TEST_P(Golden, MatchesPyTorch) {
    const GoldenCase g = read_case(g_data_dir + "/" + GetParam() + ".golden");
    std::printf("  spec: %s\n", g.spec.c_str());
    const Replay r = replay(g, SNN_DEVICE_CPU);
    ASSERT_EQ(r.error, "");

    expect_close("outputs", r.outputs, g.arrays.at("outputs"), kRel,
                 g.abs_tolerance_of("outputs", kAbs));
    expect_close("loss", {r.loss}, g.arrays.at("loss_value"), kRel,
                 g.abs_tolerance_of("loss_value", kAbs));
    expect_close("gradients", r.gradients, g.arrays.at("gradients"), kRel,
                 g.abs_tolerance_of("gradients", kAbs));
    expect_close("input gradients", r.input_gradients, g.arrays.at("input_gradients"), kRel,
                 g.abs_tolerance_of("input_gradients", kAbs));
    expect_close("params after steps", r.params_after_steps, g.arrays.at("params_after_steps"),
                 kStepsRel, kStepsAbs);
    if (g.arrays.count("state_after_steps"))
        expect_close("state after steps", r.state_after_steps, g.arrays.at("state_after_steps"),
                     kStepsRel, kStepsAbs);
}

INSTANTIATE_TEST_SUITE_P(PyTorch, Golden, ::testing::ValuesIn(case_names(g_data_dir)),
                         [](const ::testing::TestParamInfo<std::string> &info) { return info.param; });

// Guards against a data directory that silently lost its cases.
TEST(GoldenData, HoldsEveryCase) { EXPECT_GE(case_names(g_data_dir).size(), 65u); }

}  // namespace

int main(int argc, char **argv) {
    // The cases are listed while gtest parses its flags, so the directory
    // must be known first: it is the one argument that is not a gtest flag.
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]).rfind("--gtest", 0) != 0) g_data_dir = argv[i];
    if (g_data_dir.empty()) {
        std::fprintf(stderr, "usage: %s <golden data directory> [gtest flags]\n", argv[0]);
        return 2;
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}

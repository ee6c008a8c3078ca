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

#include "golden_check.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace golden;

std::string g_data_dir;

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, MatchesPyTorch) {
    const GoldenCase g = read_case(g_data_dir + "/" + GetParam() + ".golden");
    std::printf("  spec: %s\n", g.spec.c_str());
    expect_matches_pytorch(g, replay(g, SNN_DEVICE_CPU));
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

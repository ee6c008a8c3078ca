// snn at bf16 against PyTorch autocast (tests/golden/autocast/*.golden,
// written by generate_autocast.py): each case's training pass replayed
// through the C API at bf16 and at float32, from the case's float32
// parameters, state and inputs. Per array (outputs, loss, parameter
// gradients, input gradients) the error of a result v against the float64
// reference r is
//     e(v) = ||v - r|| / ||r||   (2-norms over the array)
// and the test asserts the table below (kBounds); it prints e for snn at
// bf16, for autocast and for snn at float32.
//
// Usage: test_autocast <autocast data directory>
#include <gtest/gtest.h>
#include <snn.h>

#include "golden_case.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace golden;

std::string g_data_dir;

// The tolerance table (for snn.h's "Mixed precision" section): e against
// the float64 reference, per array, on these cases (an MLP, the default
// CNN's layout, a resnet block, conv1d + lstm + attention):
//
//   array             snn bf16   snn bf16 vs autocast   snn float32   (measured: snn bf16 / autocast)
//   outputs           2^-7       2^-6                   2^-16         0.0004-0.0028 / 0.0028-0.0040
//   loss              2^-8       2^-8                   2^-18         2e-7-0.0006   / 1e-5-0.0018
//   gradients         2^-4       2^-4                   2^-14         0.0022-0.030  / 0.0043-0.035
//   input gradients   2^-2       2^-3                   2^-14         0.0038-0.111  / 0.0040-0.106
//
// bf16 keeps 8 significant bits (unit roundoff u = 2^-8); a product whose
// operands are both rounded is off by up to 2u of the sum of its terms'
// magnitudes, and the product layers a value passes through (forward, then
// backward products of rounded activations and gradients) add up to a few u.
// Max pooling widens the gradients' bounds: it routes each window's
// gradient to its largest input, and bf16's perturbation of near-equal
// inputs can pick another one, moving that whole gradient to a neighbour
// (the default CNN's gradients 0.030 and 0.062, the resnet block's input
// gradients 0.111; autocast's alike, and closer to snn's than to float64's).
// snn rounds only the operands of its products and keeps float32
// activations; autocast also rounds each bf16 op's output, so snn's outputs
// at bf16 are closer to the reference than autocast's (asserted; the
// gradients' errors are the pooling's in both).
struct Bound {
    const char *array;
    double bf16, autocast, f32;
};
constexpr Bound kBounds[] = {
    {"outputs", 1.0 / 128, 1.0 / 64, 1.0 / 65536},
    {"loss_value", 1.0 / 256, 1.0 / 256, 1.0 / 262144},
    {"gradients", 1.0 / 16, 1.0 / 16, 1.0 / 16384},
    {"input_gradients", 1.0 / 4, 1.0 / 8, 1.0 / 16384},
};

// snn's results of one training pass at a precision.
std::map<std::string, std::vector<double>> replay_at(const GoldenCase &g, snn_precision precision) {
    std::map<std::string, std::vector<double>> out;
    snn_model *model = nullptr;
    EXPECT_EQ(snn_model_create(g.spec.c_str(), &model), SNN_OK) << snn_last_error();
    snn_handles::Model m(model);
    const std::vector<float> params = g.floats("params");
    EXPECT_EQ(snn_set_parameters(model, params.data(), params.size()), SNN_OK);
    if (g.arrays.count("state")) {
        const std::vector<float> state = g.floats("state");
        EXPECT_EQ(snn_set_state(model, state.data(), state.size()), SNN_OK);
    }
    snn_forward_cache *f = nullptr;
    snn_backward_cache *b = nullptr;
    EXPECT_EQ(snn_preallocate(model, g.batch, &f), SNN_OK) << snn_last_error();
    snn_handles::Forward fwd(f);
    EXPECT_EQ(snn_preallocate_grads(model, g.batch, &b), SNN_OK) << snn_last_error();
    snn_handles::Backward bwd(b);
    EXPECT_EQ(snn_cache_set_precision(f, precision), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_set_input_gradient(b, 1), SNN_OK);
    const std::vector<float> inputs = g.floats("inputs");
    EXPECT_EQ(snn_set_inputs(f, inputs.data(), inputs.size()), SNN_OK) << snn_last_error();
    const std::vector<double> &l = g.arrays.at("labels");
    const std::vector<int32_t> labels(l.begin(), l.end());
    EXPECT_EQ(snn_set_labels(b, labels.data(), labels.size()), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_forward(f, model), SNN_OK) << snn_last_error();
    std::vector<float> y(g.arrays.at("outputs").size()), grads(params.size()), dx(inputs.size());
    EXPECT_EQ(snn_get_outputs(f, y.data(), y.size()), SNN_OK) << snn_last_error();
    float loss = 0.0f;
    EXPECT_EQ(snn_backprop(b, f, model, SNN_LOSS_LOGIT_CROSSENTROPY, &loss), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_get_gradients(b, grads.data(), grads.size()), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_get_input_gradients(b, dx.data(), dx.size()), SNN_OK) << snn_last_error();
    out["outputs"].assign(y.begin(), y.end());
    out["loss_value"] = {double(loss)};
    out["gradients"].assign(grads.begin(), grads.end());
    out["input_gradients"].assign(dx.begin(), dx.end());
    return out;
}

// ||v - r|| / ||r|| (2-norms)
double error_of(const std::vector<double> &v, const std::vector<double> &r) {
    EXPECT_EQ(v.size(), r.size());
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < std::min(v.size(), r.size()); ++i) {
        diff += (v[i] - r[i]) * (v[i] - r[i]);
        scale += r[i] * r[i];
    }
    return scale > 0.0 ? std::sqrt(diff / scale) : std::sqrt(diff);
}

std::vector<std::string> autocast_cases() { return case_names(g_data_dir); }

class Autocast : public ::testing::TestWithParam<std::string> {};

TEST_P(Autocast, Bf16AgainstAutocastAndFloat64) {
    const GoldenCase g = read_case(g_data_dir + "/" + GetParam() + ".golden");
    std::printf("  spec: %s\n  %-16s %12s %12s %12s %14s\n", g.spec.c_str(), "array", "snn bf16", "autocast",
                "snn float32", "snn-autocast");
    const auto bf16 = replay_at(g, SNN_PRECISION_BF16), f32 = replay_at(g, SNN_PRECISION_FLOAT32);
    for (const Bound &b : kBounds) {
        const std::vector<double> &ref = g.arrays.at(b.array), &ac = g.arrays.at(std::string("autocast_") + b.array);
        const double e16 = error_of(bf16.at(b.array), ref), eac = error_of(ac, ref);
        const double e32 = error_of(f32.at(b.array), ref), e_vs_ac = error_of(bf16.at(b.array), ac);
        std::printf("  %-16s %12.3g %12.3g %12.3g %14.3g\n", b.array, e16, eac, e32, e_vs_ac);
        EXPECT_LE(e16, b.bf16) << b.array;
        EXPECT_LE(e_vs_ac, b.autocast) << b.array;
        EXPECT_LE(e32, b.f32) << b.array;
        if (std::string(b.array) == "outputs") {
            EXPECT_LT(e16, eac) << "snn's bf16 outputs are expected closer to float64";
        }
    }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, Autocast, ::testing::ValuesIn(autocast_cases()),
                         [](const ::testing::TestParamInfo<std::string> &info) { return info.param; });

// Guards against a data directory that silently lost its cases.
TEST(AutocastData, HoldsEveryCase) { EXPECT_EQ(autocast_cases().size(), 4u); }

}  // namespace

int main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]).rfind("--gtest", 0) != 0) g_data_dir = argv[i];
    if (g_data_dir.empty()) {
        std::fprintf(stderr, "usage: %s <autocast data directory> [gtest flags]\n", argv[0]);
        return 2;
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}

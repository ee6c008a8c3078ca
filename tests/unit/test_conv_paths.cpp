// The convolutions' table at bf16 precision (cpu/conv_paths.h): the rule
// that gives a layer the float32 rows where they measured faster than the
// bf16 ones (conv_bf16_takes_f32). For shapes on each side of each of its
// thresholds, the row the table picks at bf16 (the float32 row the layer
// takes at float32, or a bf16 row: native where AVX-512 BF16 is in force,
// emulated under a cap); with the rule turned off, every shape on a bf16
// row; and a layer's results at bf16: float32's bits where the rule gives
// it float32, rounded operands (not float32's bits, within bf16's bound)
// where it does not. Linked from the static library; run as it is and
// under SNN_CPU_ISA=avx2 (tests/unit/meson.build).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "cpu/conv_paths.h"
#include "cpu/cpu_backend.h"
#include "cpu/kernel_choice.h"
#include "ops/dims.h"
#include "ops/spec.h"
#include "helpers.h"

namespace {

using snn::ConvPath;
using snn::Precision;
using namespace snn_test;

// The first convolution of a spec.
snn::ConvDims dims_of(const std::string &spec) {
    const snn::Network net = snn::parse_spec(spec);
    for (const snn::Layer &l : net.layers)
        if (l.kind == snn::OpKind::conv) return snn::conv_dims(l);
    ADD_FAILURE() << "no convolution in " << spec;
    return snn::ConvDims{};
}

bool is_bf16_row(ConvPath p) {
    return p == ConvPath::bf16_direct || p == ConvPath::bf16_shifted || p == ConvPath::bf16_im2col;
}

struct Shape {
    const char *spec;
    bool f32;  // the rule gives it the float32 rows
    const char *why;
};

// Each threshold of the rule (cpu/conv.cpp) with a shape below and above it.
constexpr Shape kShapes[] = {
    // few taps: always float32
    {"input 28x28x1; conv 5x5 16 relu", true, "few taps, 5x5 first layer (SimpleNNs CNN)"},
    {"input 28x28x1; conv 3x3 32 relu pad=1", true, "few taps, 3x3 first layer (default CNN)"},
    {"input 28x28x16; conv 1 32 relu", true, "few taps, 1x1 on 16 channels"},
    // "same" padding, stride 1 (the shifted lowering): 512k multiply-adds per
    // image
    {"input 7x7x16; conv 3 16 pad=1", true, "same padding, 113k macs"},
    {"input 7x7x16; conv 3 32 pad=1", true, "same padding, 226k macs"},
    {"input 12x12x16; conv 3 32 pad=1 relu", false, "same padding, 663k macs"},
    {"input 28x28x16; conv 3 16 pad=1 nobias", false, "same padding, 1.8M macs (resnet)"},
    {"input 14x14x32; conv 3x3 64 relu pad=1", false, "same padding, 18432 weights, 3.6M macs (default CNN)"},
    // other stride-1 layers: 4M multiply-adds per image
    {"input 12x12x16; conv 3x3 8 relu", true, "stride 1, 115k macs (SimpleNNs CNN)"},
    {"input 12x12x64; conv 3x3 32 relu", true, "stride 1, 1.8M macs"},
    {"input 26x26x32; conv 3x3 32 relu", false, "stride 1, 5.3M macs"},
    // strided layers: 4608 weights
    {"input 14x14x16; conv 3x3 16 relu stride=2 pad=1", true, "stride 2, 2304 weights"},
    {"input 28x28x8; conv 3x3 16 relu stride=2 pad=1", true, "stride 2, 1152 weights, 226k macs"},
    {"input 14x14x16; conv 3x3 32 relu stride=2 pad=1", false, "stride 2, 4608 weights, 226k macs"},
    {"input 28x28x16; conv 3x3 32 relu stride=2 pad=1", false, "stride 2, 4608 weights, 903k macs"},
};

// Restores the rule and the kernel choice when a test ends.
class ConvPaths : public ::testing::Test {
   protected:
    void TearDown() override {
        snn::cpu_bf16_rules(true);
        snn::cpu_choose_kernels(snn::CpuKernels::environment);
    }
};

TEST_F(ConvPaths, TheRuleSplitsTheShapesAtItsThresholds) {
    for (const Shape &s : kShapes) {
        SCOPED_TRACE(std::string(s.why) + ": " + s.spec);
        EXPECT_EQ(snn::conv_bf16_takes_f32(dims_of(s.spec)), s.f32);
    }
}

TEST_F(ConvPaths, AtBf16ALayerTakesTheRuleSide) {
    const bool native = snn::cpu_has_bf16();
    for (const Shape &s : kShapes) {
        SCOPED_TRACE(std::string(s.why) + ": " + s.spec);
        const snn::ConvDims d = dims_of(s.spec);
        const ConvPath f32 = snn::conv_path_for(d, Precision::f32);
        const ConvPath bf16 = snn::conv_path_for(d, Precision::bf16);
        EXPECT_FALSE(is_bf16_row(f32)) << snn::conv_path_name(f32);
        if (s.f32) {
            EXPECT_EQ(bf16, f32) << snn::conv_path_name(bf16) << " against " << snn::conv_path_name(f32);
        } else {
            EXPECT_TRUE(is_bf16_row(bf16)) << snn::conv_path_name(bf16);
            // Natively the shifted lowering or im2col; emulated, im2col only.
            if (!native) {
                EXPECT_EQ(bf16, ConvPath::bf16_im2col) << snn::conv_path_name(bf16);
            }
        }
        // Off, every layer at bf16 on a bf16 row; the native ones only with
        // AVX-512 BF16 in force (the SNN_CPU_ISA cap).
        snn::cpu_bf16_rules(false);
        const ConvPath off = snn::conv_path_for(d, Precision::bf16);
        snn::cpu_bf16_rules(true);
        EXPECT_TRUE(is_bf16_row(off)) << snn::conv_path_name(off);
        if (!native) {
            EXPECT_EQ(off, ConvPath::bf16_im2col) << snn::conv_path_name(off);
        }
    }
}

// With AVX-512 BF16 in force and the AVX-512 direct kernels: the rows by name.
TEST_F(ConvPaths, NativeRowsByName) {
    if (!snn::cpu_has_bf16() || snn::cpu_conv512_ruled_out())
        GTEST_SKIP() << "no AVX-512 BF16 in force, or the AVX-512 direct convolutions ruled out";
    struct Want {
        const char *spec;
        ConvPath bf16;
    };
    for (const Want &w : {Want{"input 28x28x1; conv 5x5 16 relu", ConvPath::avx512_direct},
                          Want{"input 12x12x16; conv 3x3 8 relu", ConvPath::avx512_direct},
                          Want{"input 7x7x16; conv 3 32 pad=1", ConvPath::avx512_direct},
                          Want{"input 28x28x16; conv 3 16 pad=1 nobias", ConvPath::bf16_shifted},
                          Want{"input 14x14x16; conv 3x3 16 relu stride=2 pad=1", ConvPath::im2col},
                          Want{"input 12x12x16; conv 3 32 pad=1 relu", ConvPath::bf16_shifted},
                          Want{"input 26x26x32; conv 3x3 32 relu", ConvPath::bf16_im2col},
                          Want{"input 28x28x16; conv 3x3 32 relu stride=2 pad=1", ConvPath::bf16_im2col}}) {
        const ConvPath got = snn::conv_path_for(dims_of(w.spec), Precision::bf16);
        EXPECT_EQ(got, w.bf16) << w.spec << ": " << snn::conv_path_name(got);
    }
}

// The reference kernels follow the rule too: float32's reference row.
TEST_F(ConvPaths, TheReferenceKernelsFollowTheRule) {
    snn::cpu_choose_kernels(snn::CpuKernels::reference);
    for (const Shape &s : kShapes) {
        SCOPED_TRACE(s.spec);
        const ConvPath bf16 = snn::conv_path_for(dims_of(s.spec), Precision::bf16);
        EXPECT_EQ(bf16, s.f32 ? ConvPath::im2col : ConvPath::bf16_im2col) << snn::conv_path_name(bf16);
    }
}

struct Pass {
    std::vector<float> y, grads, input_grads;
};

// A forward pass and backprop (mean squared error) of `spec` at `precision`
// on fixed parameters and inputs.
Pass pass_at(const std::string &spec, int64_t batch, snn_precision precision) {
    Model m = make_model(spec);
    Random rng(7);
    std::vector<float> params = rng.uniform_vector(param_count(m.get()), -0.3f, 0.3f);
    EXPECT_EQ(snn_set_parameters(m.get(), params.data(), params.size()), SNN_OK);
    const std::vector<float> x = rng.uniform_vector(size_t(batch) * input_size(m.get()), -1.0f, 1.0f);
    const std::vector<float> t = rng.uniform_vector(size_t(batch) * output_size(m.get()), -1.0f, 1.0f);
    Forward f = make_forward(m.get(), batch);
    Backward b = make_backward(m.get(), batch);
    EXPECT_EQ(snn_cache_set_precision(f.get(), precision), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_set_input_gradient(b.get(), 1), SNN_OK);
    Pass p;
    p.y = run(f.get(), m.get(), x);
    EXPECT_EQ(snn_set_targets(b.get(), t.data(), t.size()), SNN_OK);
    EXPECT_EQ(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_MSE, nullptr), SNN_OK) << snn_last_error();
    p.grads = gradients(b.get(), m.get());
    p.input_grads.resize(x.size());
    EXPECT_EQ(snn_get_input_gradients(b.get(), p.input_grads.data(), p.input_grads.size()), SNN_OK);
    return p;
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The largest difference over the largest magnitude of want.
double relative_gap(const std::vector<float> &got, const std::vector<float> &want) {
    double gap = 0.0, scale = 0.0;
    for (size_t i = 0; i < want.size(); ++i) {
        gap = std::max(gap, double(std::fabs(got[i] - want[i])));
        scale = std::max(scale, double(std::fabs(want[i])));
    }
    return scale > 0.0 ? gap / scale : gap;
}

// Where the rule gives a layer float32, bf16 precision runs the same kernels
// as float32 on the same operands: the same bits.
TEST_F(ConvPaths, ALayerTheRuleGivesFloat32HasFloat32sBitsAtBf16) {
    for (const char *spec : {"input 12x12x16; conv 3x3 8 relu", "input 28x28x1; conv 5x5 16 relu",
                             "input 14x14x16; conv 3x3 16 tanh stride=2 pad=1"}) {
        SCOPED_TRACE(spec);
        ASSERT_TRUE(snn::conv_bf16_takes_f32(dims_of(spec)));
        const Pass f32 = pass_at(spec, 3, SNN_PRECISION_FLOAT32);
        const Pass bf16 = pass_at(spec, 3, SNN_PRECISION_BF16);
        EXPECT_TRUE(same_bits(bf16.y, f32.y));
        EXPECT_TRUE(same_bits(bf16.grads, f32.grads));
        EXPECT_TRUE(same_bits(bf16.input_grads, f32.input_grads));
    }
}

// Where it does not, the products round their operands to bf16: results
// off float32's by bf16's rounding (more than float32's sums in another
// order would make, within snn.h's bound).
TEST_F(ConvPaths, ALayerTheRuleLeavesToBf16RoundsItsOperands) {
    for (const char *spec : {"input 12x12x16; conv 3 32 pad=1 relu", "input 28x28x16; conv 3x3 32 relu stride=2 pad=1"}) {
        SCOPED_TRACE(spec);
        ASSERT_FALSE(snn::conv_bf16_takes_f32(dims_of(spec)));
        const Pass f32 = pass_at(spec, 2, SNN_PRECISION_FLOAT32);
        const Pass bf16 = pass_at(spec, 2, SNN_PRECISION_BF16);
        for (const auto &[what, got, want] : {std::tuple{"outputs", &bf16.y, &f32.y},
                                              std::tuple{"gradients", &bf16.grads, &f32.grads},
                                              std::tuple{"input gradients", &bf16.input_grads, &f32.input_grads}}) {
            const double gap = relative_gap(*got, *want);
            EXPECT_GT(gap, 1e-5) << what;  // rounded: float32's sums agree to ~1e-7
            EXPECT_LT(gap, 0.05) << what;  // within 2^-8 * 2 * sqrt(K) (K = 144 to 288)
        }
    }
}

}  // namespace

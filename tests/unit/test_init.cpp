// Parameter initialisation: deterministic per seed, and each initialiser's
// empirical statistics match its formula (fan_in = in * kh * kw,
// fan_out = out * kh * kw; biases zero).
#include <cmath>
#include <cstring>

#include "helpers.h"

using namespace snn_test;

namespace {

bool bit_identical(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(Init, SameSeedGivesBitIdenticalParameters) {
    const char *spec = "input 8x8x2; conv 3x3 4 relu; flatten; dense 10 init=he_normal; dense 3";
    Model a = make_model(spec), b = make_model(spec);
    ASSERT_EQ(snn_model_init(a.get(), 12345), SNN_OK);
    ASSERT_EQ(snn_model_init(b.get(), 12345), SNN_OK);
    EXPECT_TRUE(bit_identical(get_params(a.get()), get_params(b.get())));
}

TEST(Init, DifferentSeedsGiveDifferentParameters) {
    Model a = make_model("input 10; dense 10"), b = make_model("input 10; dense 10");
    ASSERT_EQ(snn_model_init(a.get(), 1), SNN_OK);
    ASSERT_EQ(snn_model_init(b.get(), 2), SNN_OK);
    const std::vector<float> pa = get_params(a.get()), pb = get_params(b.get());
    size_t equal = 0;
    for (size_t i = 0; i < 100; ++i) equal += pa[i] == pb[i];
    EXPECT_EQ(equal, 0u);
}

TEST(Init, CreateUsesSeedZero) {
    Model a = make_model("input 6; dense 5 tanh; dense 2"), b = make_model("input 6; dense 5 tanh; dense 2");
    ASSERT_EQ(snn_model_init(b.get(), 7), SNN_OK);
    ASSERT_EQ(snn_model_init(b.get(), 0), SNN_OK);
    EXPECT_TRUE(bit_identical(get_params(a.get()), get_params(b.get())));
}

// A layer's values do not depend on the layers before it.
TEST(Init, EachLayerHasItsOwnStream) {
    Model a = make_model("input 4; dense 3; dense 5"), b = make_model("input 4; dense 3 init=zeros; dense 5");
    const std::vector<float> pa = get_params(a.get()), pb = get_params(b.get());
    // Layer 2's weights start after 12 + 3 parameters in both.
    EXPECT_TRUE(bit_identical(std::vector<float>(pa.begin() + 15, pa.begin() + 30),
                              std::vector<float>(pb.begin() + 15, pb.begin() + 30)));
}

struct Stats {
    double mean = 0, stddev = 0, max_abs = 0, within_one_std = 0;
};

Stats stats_of(const float *w, size_t n) {
    Stats s;
    for (size_t i = 0; i < n; ++i) s.mean += w[i];
    s.mean /= double(n);
    for (size_t i = 0; i < n; ++i) {
        s.stddev += (w[i] - s.mean) * (w[i] - s.mean);
        s.max_abs = std::max(s.max_abs, std::fabs(double(w[i])));
    }
    s.stddev = std::sqrt(s.stddev / double(n));
    for (size_t i = 0; i < n; ++i) s.within_one_std += std::fabs(w[i]) <= s.stddev;
    s.within_one_std /= double(n);
    return s;
}

struct InitCase {
    const char *name;
    const char *spec;   // the layer under test is the first with weights
    double fan_in, fan_out;
    bool uniform;
    double scale;       // limit = sqrt(scale / fan) or std = sqrt(scale / fan)
    bool uses_fan_out;  // fan = fan_in + fan_out (Glorot) or fan_in
};

std::ostream &operator<<(std::ostream &os, const InitCase &c) { return os << c.spec; }

class Initialiser : public ::testing::TestWithParam<InitCase> {};

TEST_P(Initialiser, MatchesItsFormula) {
    const InitCase &c = GetParam();
    Model m = make_model(c.spec);
    ASSERT_EQ(snn_model_init(m.get(), 99), SNN_OK);
    size_t wo = 0, wc = 0, bo = 0, bc = 0;
    for (int64_t layer = 1; wc == 0; ++layer)
        ASSERT_EQ(snn_model_layer_params(m.get(), layer, &wo, &wc, &bo, &bc), SNN_OK);
    const std::vector<float> p = get_params(m.get());
    for (size_t i = 0; i < bc; ++i) EXPECT_EQ(p[bo + i], 0.0f) << "bias " << i;

    const Stats s = stats_of(p.data() + wo, wc);
    const double fan = c.uses_fan_out ? c.fan_in + c.fan_out : c.fan_in;
    const double n = double(wc);
    if (c.uniform) {
        // U(-limit, limit): std limit / sqrt(3), values fill the interval.
        const double limit = std::sqrt(c.scale / fan);
        EXPECT_LE(s.max_abs, limit);
        EXPECT_GT(s.max_abs, 0.999 * limit);
        EXPECT_NEAR(s.stddev, limit / std::sqrt(3.0), 0.02 * limit / std::sqrt(3.0));
        EXPECT_NEAR(s.within_one_std, 1.0 / std::sqrt(3.0), 0.01);
        EXPECT_NEAR(s.mean, 0.0, 5.0 * limit / std::sqrt(3.0 * n));
    } else {
        // N(0, std^2): 68.3% within one standard deviation.
        const double stddev = std::sqrt(c.scale / fan);
        EXPECT_NEAR(s.stddev, stddev, 0.02 * stddev);
        EXPECT_NEAR(s.within_one_std, 0.6827, 0.01);
        EXPECT_GT(s.max_abs, 3.5 * stddev);
        EXPECT_NEAR(s.mean, 0.0, 5.0 * stddev / std::sqrt(n));
    }
}

const InitCase kInitCases[] = {
    {"glorot_uniform_dense", "input 400; dense 300", 400, 300, true, 6.0, true},
    {"glorot_normal_dense", "input 400; dense 300 init=glorot_normal", 400, 300, false, 2.0, true},
    {"he_uniform_dense", "input 400; dense 300 init=he_uniform", 400, 300, true, 6.0, false},
    {"he_normal_dense", "input 400; dense 300 init=he_normal", 400, 300, false, 2.0, false},
    {"lecun_normal_dense", "input 400; dense 300 init=lecun_normal", 400, 300, false, 1.0, false},
    // conv 5x5 64 over 32 channels: fan_in 32*25, fan_out 64*25.
    {"glorot_uniform_conv", "input 8x8x32; conv 5x5 64", 800, 1600, true, 6.0, true},
    {"he_normal_conv", "input 8x8x32; conv 5x5 64 init=he_normal", 800, 1600, false, 2.0, false},
    // Dense over an image input: fan_in counts every feature.
    {"he_uniform_dense_over_image", "input 10x10x4; flatten; dense 300 init=he_uniform", 400, 300,
     true, 6.0, false},
    // Dense over a sequence reads each step: fan_in is a step's features.
    {"glorot_uniform_dense_over_sequence", "input seq 50x400; dense 300", 400, 300, true, 6.0, true},
    // conv1d 5 64 over 32 channels: fan_in 32*5, fan_out 64*5.
    {"glorot_uniform_conv1d", "input seq 9x32; conv1d 5 64", 160, 320, true, 6.0, true},
    {"he_normal_conv1d", "input seq 9x32; conv1d 5 64 init=he_normal", 160, 320, false, 2.0, false},
    // nn.Embedding's N(0, 1), and posembed's N(0, 0.02).
    {"normal_embedding", "input tokens 4 vocab=400; embedding 300", 1, 0, false, 1.0, false},
    {"normal_posembed", "input seq 400x300; posembed", 1, 0, false, 0.0004, false},
};

INSTANTIATE_TEST_SUITE_P(Formulas, Initialiser, ::testing::ValuesIn(kInitCases),
                         [](const ::testing::TestParamInfo<InitCase> &info) { return info.param.name; });

// As torch.nn.Embedding's padding_idx: the pad row starts at zero, the
// others are drawn; the same seed gives the same rows.
TEST(Init, EmbeddingPadRowStartsAtZero) {
    Model m = make_model("input tokens 3 vocab=6; embedding 4 pad=2");
    ASSERT_EQ(snn_model_init(m.get(), 8), SNN_OK);
    const std::vector<float> p = get_params(m.get());
    for (size_t row = 0; row < 6; ++row)
        for (size_t f = 0; f < 4; ++f) {
            if (row == 2) EXPECT_EQ(p[row * 4 + f], 0.0f) << "pad row, feature " << f;
            else EXPECT_NE(p[row * 4 + f], 0.0f) << "row " << row << ", feature " << f;
        }
    Model again = make_model("input tokens 3 vocab=6; embedding 4 pad=2");
    ASSERT_EQ(snn_model_init(again.get(), 8), SNN_OK);
    EXPECT_TRUE(bit_identical(get_params(again.get()), p));
}

TEST(Init, ZerosGivesZeroWeights) {
    Model m = make_model("input 8x8x2; conv 3x3 4 init=zeros; flatten; dense 5 init=zeros");
    ASSERT_EQ(snn_model_init(m.get(), 5), SNN_OK);
    for (float v : get_params(m.get())) EXPECT_EQ(v, 0.0f);
}

TEST(Init, ReinitialisingResetsBiasesToZero) {
    Model m = make_model("input 3; dense 2");
    std::vector<float> p(8, 1.0f);
    ASSERT_EQ(snn_set_parameters(m.get(), p.data(), p.size()), SNN_OK);
    ASSERT_EQ(snn_model_init(m.get(), 3), SNN_OK);
    p = get_params(m.get());
    EXPECT_EQ(p[6], 0.0f);
    EXPECT_EQ(p[7], 0.0f);
    EXPECT_NE(p[0], 1.0f);
}

// lstm and gru: every parameter, biases included, uniform in
// [-1/sqrt(H), 1/sqrt(H)] as PyTorch, from the layer's own seeded stream.
TEST(Init, RecurrentParametersAreUniformInOneOverSqrtH) {
    for (const char *spec : {"input seq 6x5; lstm 16 bidirectional", "input seq 6x5; gru 16"}) {
        Model a = make_model(spec), b = make_model(spec);
        ASSERT_EQ(snn_model_init(a.get(), 11), SNN_OK);
        ASSERT_EQ(snn_model_init(b.get(), 11), SNN_OK);
        const std::vector<float> p = get_params(a.get());
        EXPECT_TRUE(bit_identical(p, get_params(b.get()))) << spec;
        const double limit = 0.25;
        double sum = 0.0, squares = 0.0, largest = 0.0;
        for (float v : p) {
            EXPECT_LE(std::fabs(v), limit) << spec;
            sum += v;
            squares += double(v) * v;
            largest = std::fmax(largest, std::fabs(v));
        }
        const double n = double(p.size());
        EXPECT_NEAR(sum / n, 0.0, 4.0 * limit / std::sqrt(3.0 * n)) << spec;
        EXPECT_NEAR(squares / n, limit * limit / 3.0, 0.1 * limit * limit / 3.0) << spec;
        EXPECT_GT(largest, 0.99 * limit) << spec;
        ASSERT_EQ(snn_model_init(b.get(), 12), SNN_OK);
        EXPECT_FALSE(bit_identical(p, get_params(b.get()))) << spec;
    }
}

}  // namespace

namespace {

// attention as nn.MultiheadAttention: in_proj_weight xavier_uniform
// (limit sqrt(6 / (E + 3E))), out_proj.weight uniform(+-1/sqrt(E)) (variance
// limit^2 / 3), both biases zero; seeded like every layer.
TEST(Init, AttentionAsPyTorch) {
    const char *spec = "input seq 4x64; attention heads=4";
    Model m = make_model(spec), again = make_model(spec);
    ASSERT_EQ(snn_model_init(m.get(), 99), SNN_OK);
    ASSERT_EQ(snn_model_init(again.get(), 99), SNN_OK);
    const std::vector<float> p = get_params(m.get());
    EXPECT_TRUE(bit_identical(p, get_params(again.get())));
    const size_t e = 64;
    ASSERT_EQ(p.size(), 4 * e * e + 4 * e);
    struct Block {
        size_t begin, count;
        double limit;
    } blocks[] = {{0, 3 * e * e, std::sqrt(6.0 / (4.0 * e))}, {3 * e * e + 3 * e, e * e, 1.0 / std::sqrt(double(e))}};
    for (const Block &b : blocks) {
        double sum = 0.0, squares = 0.0, most = 0.0;
        for (size_t i = b.begin; i < b.begin + b.count; ++i) {
            sum += p[i];
            squares += double(p[i]) * p[i];
            most = std::fmax(most, std::fabs(p[i]));
        }
        const double mean = sum / double(b.count), variance = squares / double(b.count);
        EXPECT_LE(most, b.limit);
        EXPECT_GE(most, 0.99 * b.limit);
        EXPECT_NEAR(mean, 0.0, 0.02 * b.limit);
        EXPECT_NEAR(variance, b.limit * b.limit / 3.0, 0.05 * b.limit * b.limit / 3.0);
    }
    for (size_t i = 0; i < 3 * e; ++i) EXPECT_EQ(p[3 * e * e + i], 0.0f) << "in_proj_bias " << i;
    for (size_t i = 0; i < e; ++i) EXPECT_EQ(p[4 * e * e + 3 * e + i], 0.0f) << "out_proj.bias " << i;
}

}  // namespace

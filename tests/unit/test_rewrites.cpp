// Inference rewrites (snn_cache_set_inference_rewrites): a batchnorm folded
// into the convolution or dense layer before it (and a relu after it into
// that layer's output pass). Each case compares a cache with rewrites on
// against one with them off, on the same model: outputs within float32
// rounding of the sums, whatever the parameters and running statistics
// (random, with extreme variances), and following every way they can
// change. Whether a pass was rewritten shows in backprop, which refuses a
// rewritten pass: the cases where nothing may be folded must backprop.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "helpers.h"
#include "snn.h"

#include "lcg.h"

namespace {

using snn_test::Lcg;

struct Model {
    snn_model *m = nullptr;
    explicit Model(const std::string &spec) {
        EXPECT_EQ(snn_model_create(spec.c_str(), &m), SNN_OK) << snn_last_error();
    }
    ~Model() { snn_model_destroy(m); }
    size_t params() const {
        size_t n = 0;
        EXPECT_EQ(snn_parameter_count(m, &n), SNN_OK);
        return n;
    }
    size_t state() const {
        size_t n = 0;
        EXPECT_EQ(snn_state_count(m, &n), SNN_OK);
        return n;
    }
};

struct Cache {
    snn_forward_cache *c = nullptr;
    Cache(const Model &m, int64_t batch, bool rewrites) {
        EXPECT_EQ(snn_preallocate(m.m, batch, &c), SNN_OK) << snn_last_error();
        EXPECT_EQ(snn_cache_set_training(c, 0), SNN_OK);
        EXPECT_EQ(snn_cache_set_inference_rewrites(c, rewrites ? 1 : 0), SNN_OK) << snn_last_error();
    }
    ~Cache() { snn_forward_cache_destroy(c); }
    std::vector<float> run(const Model &m, const std::vector<float> &x) {
        EXPECT_EQ(snn_set_inputs(c, x.data(), x.size()), SNN_OK) << snn_last_error();
        EXPECT_EQ(snn_forward(c, m.m), SNN_OK) << snn_last_error();
        const float *y = nullptr;
        size_t n = 0;
        EXPECT_EQ(snn_outputs(c, &y, &n), SNN_OK);
        return std::vector<float>(y, y + n);
    }
};

// Random parameters and running statistics: batchnorm weights of both
// signs, variances from 1e-6 to 1e3 (scales up to 1000 and down to 0.03),
// means far from 0. Every state value of a layer with running statistics
// is [mean C][var C][count]: the spec's batchnorms are found by
// snn_model_layer_state.
void randomise(const Model &m, uint64_t seed, double var_exponent_max = 3.0) {
    Lcg r{seed};
    std::vector<float> p(m.params());
    for (float &v : p) v = r.next();
    ASSERT_EQ(snn_set_parameters(m.m, p.data(), p.size()), SNN_OK);
    std::vector<float> st(m.state());
    ASSERT_EQ(snn_get_state(m.m, st.data(), st.size()), SNN_OK);
    int64_t layers = 0;
    ASSERT_EQ(snn_model_layer_count(m.m, &layers), SNN_OK);
    for (int64_t l = 0; l < layers; ++l) {
        size_t at = 0, count = 0;
        ASSERT_EQ(snn_model_layer_state(m.m, l, &at, &count), SNN_OK);
        if (count == 0) continue;
        const size_t c = (count - 1) / 2;
        for (size_t i = 0; i < c; ++i) {
            st[at + i] = 3.0f * r.next();
            st[at + c + i] = float(std::pow(10.0, (double(r.next()) + 1.0) / 2.0 * (var_exponent_max + 6.0) - 6.0));
        }
        st[at + 2 * c] = 7.0f;
    }
    ASSERT_EQ(snn_set_state(m.m, st.data(), st.size()), SNN_OK) << snn_last_error();
}

std::vector<float> inputs(size_t n, uint64_t seed) {
    Lcg r{seed};
    std::vector<float> x(n);
    for (float &v : x) v = 2.0f * r.next();
    return x;
}

// Rewritten against plain: within float32 rounding of the folded sums,
// relative to the largest output.
void expect_close(const std::vector<float> &got, const std::vector<float> &want, double rel = 2e-5) {
    ASSERT_EQ(got.size(), want.size());
    double scale = 0.0;
    for (float v : want) scale = std::max(scale, double(std::fabs(v)));
    size_t bad = 0;
    for (size_t i = 0; i < want.size(); ++i)
        if (!(std::fabs(double(got[i]) - double(want[i])) <= rel * scale + 1e-6) && ++bad <= 3)
            ADD_FAILURE() << "output " << i << ": rewritten " << got[i] << ", plain " << want[i] << " (scale "
                          << scale << ")";
    EXPECT_EQ(bad, 0u);
}

// The status of a backprop of the cache's last pass.
snn_status backprop_status(const Model &m, Cache &c, int64_t batch) {
    snn_backward_cache *b = nullptr;
    EXPECT_EQ(snn_preallocate_grads(m.m, batch, &b), SNN_OK) << snn_last_error();
    std::vector<int32_t> labels(size_t(batch), 1);
    EXPECT_EQ(snn_set_labels(b, labels.data(), labels.size()), SNN_OK) << snn_last_error();
    const snn_status st = snn_backprop(b, c.c, m.m, SNN_LOSS_LOGIT_CROSSENTROPY, nullptr);
    snn_backward_cache_destroy(b);
    return st;
}

int64_t input_size(const Model &m) {
    size_t n = 0;
    EXPECT_EQ(snn_model_input_size(m.m, &n), SNN_OK);
    return int64_t(n);
}

// A residual network as examples/fashion_mnist's: convolutions without bias
// into batchnorm into relu, a batchnorm read by an add (folded without the
// relu), a dense layer with bias into batchnorm into relu.
const char *const kResidual =
    "input 12x10x3; conv 3 8 pad=1 nobias; batchnorm; relu name=s1; "
    "conv 3 8 pad=1 nobias; batchnorm; relu; conv 3 8 pad=1 nobias; batchnorm; add s1; relu; maxpool 2; "
    "conv 1 5 stride=2; batchnorm; relu; flatten; dense 16; batchnorm; relu; dense 4";

TEST(InferenceRewrites, FoldedPassesMatchThePlainPass) {
    for (const char *spec : {kResidual,
                             // few taps (the direct few-tap kernel), odd sizes, 5x5 with padding 2
                             "input 9x13x1; conv 5 7 pad=2; batchnorm; relu; flatten; dense 3",
                             // dense without relu after the batchnorm; batchnorm on vectors
                             "input 37; dense 29; batchnorm; dense 29 nobias; batchnorm; relu; dense 3"}) {
        SCOPED_TRACE(spec);
        Model m(spec);
        for (int64_t batch : {1, 3, 17}) {
            SCOPED_TRACE(batch);
            randomise(m, uint64_t(batch) * 7 + 1);
            Cache plain(m, batch, false), folded(m, batch, true);
            const std::vector<float> x = inputs(size_t(batch * input_size(m)), uint64_t(batch));
            const std::vector<float> want = plain.run(m, x);
            expect_close(folded.run(m, x), want);
            // The pass was rewritten: backprop refuses it, with a message.
            EXPECT_EQ(backprop_status(m, folded, batch), SNN_ERR_STATE);
            EXPECT_NE(std::string(snn_last_error()).find("inference rewrites"), std::string::npos)
                << snn_last_error();
            EXPECT_EQ(backprop_status(m, plain, batch), SNN_OK) << snn_last_error();
            // The same pass again gives the same bits.
            EXPECT_EQ(folded.run(m, x), folded.run(m, x));
        }
    }
}

// Extreme running statistics: variances of 1e-30 (scales of 1e15 folded
// into the weights) and 1e30, means of 1e4: the folded pass stays within
// the plain pass's rounding, relative to its largest output.
TEST(InferenceRewrites, ExtremeStatisticsFoldLikeThePlainPass) {
    Model m("input 6x6x2; conv 3 4 pad=1 nobias; batchnorm; relu; flatten; dense 3");
    randomise(m, 5);
    std::vector<float> st(m.state());
    ASSERT_EQ(snn_get_state(m.m, st.data(), st.size()), SNN_OK);
    st[0] = 1e4f;        // mean of channel 0
    st[4 + 0] = 1e-30f;  // var of channel 0: 1 / sqrt(1e-30 + 1e-5)
    st[4 + 1] = 1e30f;   // var of channel 1
    st[4 + 2] = 0.0f;    // var 0: 1 / sqrt(eps)
    ASSERT_EQ(snn_set_state(m.m, st.data(), st.size()), SNN_OK);
    Cache plain(m, 4, false), folded(m, 4, true);
    const std::vector<float> x = inputs(size_t(4 * input_size(m)), 9);
    expect_close(folded.run(m, x), plain.run(m, x));
}

// The folded copy follows every write of the parameters and the state:
// snn_set_parameters, snn_set_state, a training-mode pass of another cache,
// snn_model_init, and writes through snn_parameters's view (not counted:
// the copy is then made before every pass).
TEST(InferenceRewrites, FoldedParametersFollowEveryWrite) {
    Model m(kResidual);
    randomise(m, 11);
    const int64_t batch = 4;
    Cache plain(m, batch, false), folded(m, batch, true);
    const std::vector<float> x = inputs(size_t(batch * input_size(m)), 3);
    std::vector<float> before = folded.run(m, x);
    expect_close(before, plain.run(m, x));

    randomise(m, 12);  // snn_set_parameters and snn_set_state
    std::vector<float> after = folded.run(m, x);
    EXPECT_NE(after, before);
    expect_close(after, plain.run(m, x));

    std::vector<float> st(m.state());
    ASSERT_EQ(snn_get_state(m.m, st.data(), st.size()), SNN_OK);
    for (size_t i = 0; i < st.size(); ++i)
        if (st[i] > 0.0f && st[i] < 1000.0f && st[i] != 7.0f) st[i] *= 2.0f;  // the variances, and some means
    ASSERT_EQ(snn_set_state(m.m, st.data(), st.size()), SNN_OK);
    expect_close(folded.run(m, x), plain.run(m, x));

    {  // a training-mode pass writes the running statistics
        snn_forward_cache *t = nullptr;
        ASSERT_EQ(snn_preallocate(m.m, batch, &t), SNN_OK);
        ASSERT_EQ(snn_set_inputs(t, x.data(), x.size()), SNN_OK);
        ASSERT_EQ(snn_forward(t, m.m), SNN_OK) << snn_last_error();
        snn_forward_cache_destroy(t);
    }
    expect_close(folded.run(m, x), plain.run(m, x));

    ASSERT_EQ(snn_model_init(m.m, 99), SNN_OK);
    expect_close(folded.run(m, x), plain.run(m, x));

    float *p = nullptr;
    size_t n = 0;
    ASSERT_EQ(snn_parameters(m.m, &p, &n), SNN_OK);
    for (size_t pass = 0; pass < 3; ++pass) {
        for (size_t i = 0; i < n; ++i) p[i] = 0.9f * p[i] + 0.01f * float(i % 7);
        expect_close(folded.run(m, x), plain.run(m, x));
    }
}

// Nothing is folded where the rewrite would change what the network
// computes or what a caller reads: a convolution with its own activation,
// a product read by another node too, a batchnorm that is the output, a
// relu that is the output (the batchnorm is still folded), bf16 passes and
// training-mode passes. Those passes are the plain pass bit for bit, and
// backprop takes them.
TEST(InferenceRewrites, NothingIsFoldedWhereItWouldChangeTheNetwork) {
    for (const char *spec : {"input 5x5x2; conv 3 4 relu pad=1; batchnorm; flatten; dense 3",
                             "input 5x5x2; conv 3 4 pad=1 name=c; batchnorm; add c; flatten; dense 3",
                             "input 7; dense 5; batchnorm; dense 3; batchnorm"}) {
        SCOPED_TRACE(spec);
        Model m(spec);
        randomise(m, 21);
        Cache plain(m, 3, false), folded(m, 3, true);
        const std::vector<float> x = inputs(size_t(3 * input_size(m)), 4);
        if (std::string(spec).find("dense 5; batchnorm") != std::string::npos) {
            // the first batchnorm is folded, the last (the output) not
            expect_close(folded.run(m, x), plain.run(m, x));
            EXPECT_EQ(backprop_status(m, folded, 3), SNN_ERR_STATE);
        } else {
            EXPECT_EQ(folded.run(m, x), plain.run(m, x));
            EXPECT_EQ(backprop_status(m, folded, 3), SNN_OK) << snn_last_error();
        }
    }
    {  // a relu as the output: the batchnorm before it is folded, the relu runs
        Model m("input 7; dense 5; batchnorm; relu");
        randomise(m, 22);
        Cache plain(m, 3, false), folded(m, 3, true);
        const std::vector<float> x = inputs(size_t(3 * input_size(m)), 5);
        expect_close(folded.run(m, x), plain.run(m, x));
    }
    Model m(kResidual);
    randomise(m, 23);
    Cache plain(m, 2, false), folded(m, 2, true);
    const std::vector<float> x = inputs(size_t(2 * input_size(m)), 6);
    // Training mode: the network as written.
    ASSERT_EQ(snn_cache_set_training(plain.c, 1), SNN_OK);
    ASSERT_EQ(snn_cache_set_training(folded.c, 1), SNN_OK);
    EXPECT_EQ(folded.run(m, x), plain.run(m, x));
    EXPECT_EQ(backprop_status(m, folded, 2), SNN_OK) << snn_last_error();
    // bf16, where the processor has it: the network as written.
    ASSERT_EQ(snn_cache_set_training(plain.c, 0), SNN_OK);
    ASSERT_EQ(snn_cache_set_training(folded.c, 0), SNN_OK);
    if (snn_cache_set_precision(folded.c, SNN_PRECISION_BF16) == SNN_OK) {
        ASSERT_EQ(snn_cache_set_precision(plain.c, SNN_PRECISION_BF16), SNN_OK);
        EXPECT_EQ(folded.run(m, x), plain.run(m, x));
        EXPECT_EQ(backprop_status(m, folded, 2), SNN_OK) << snn_last_error();
    }
}

// Turning rewrites off makes the next pass plain (and backprop takes it);
// the setting reads back; bad arguments are refused.
TEST(InferenceRewrites, SettingAndArguments) {
    Model m(kResidual);
    randomise(m, 31);
    Cache plain(m, 2, false), c(m, 2, true);
    int32_t on = -1;
    ASSERT_EQ(snn_cache_inference_rewrites(c.c, &on), SNN_OK);
    EXPECT_EQ(on, 1);
    const std::vector<float> x = inputs(size_t(2 * input_size(m)), 7);
    c.run(m, x);
    EXPECT_EQ(backprop_status(m, c, 2), SNN_ERR_STATE);
    ASSERT_EQ(snn_cache_set_inference_rewrites(c.c, 0), SNN_OK);
    ASSERT_EQ(snn_cache_inference_rewrites(c.c, &on), SNN_OK);
    EXPECT_EQ(on, 0);
    EXPECT_EQ(c.run(m, x), plain.run(m, x));
    EXPECT_EQ(backprop_status(m, c, 2), SNN_OK) << snn_last_error();
    // On twice keeps one set of folds; the outputs still match.
    ASSERT_EQ(snn_cache_set_inference_rewrites(c.c, 1), SNN_OK);
    ASSERT_EQ(snn_cache_set_inference_rewrites(c.c, 1), SNN_OK);
    expect_close(c.run(m, x), plain.run(m, x));

    EXPECT_EQ(snn_cache_set_inference_rewrites(c.c, 2), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(snn_last_error()).find("on is 2"), std::string::npos) << snn_last_error();
    EXPECT_EQ(snn_cache_set_inference_rewrites(nullptr, 1), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(snn_cache_inference_rewrites(c.c, nullptr), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(snn_cache_inference_rewrites(nullptr, &on), SNN_ERR_NULL_ARGUMENT);
}

}  // namespace

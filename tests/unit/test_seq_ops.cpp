// embedding, posembed, seqpool and conv1d through the C API, by values a
// reader can check: lookups and their scatter-added gradient, the pooled
// step of each mode, conv1d over padded samples equal to conv1d over the
// samples cut at their lengths, and padded steps (values or token ids) that
// change nothing. Finite differences, goldens and the GPU are the op
// harness's (tests/ops).
#include <gtest/gtest.h>
#include <snn.h>

#include <cmath>
#include <string>
#include <vector>

#include "helpers.h"

namespace {

using namespace snn_test;
using Floats = std::vector<float>;
using Ints = std::vector<int32_t>;

// Forward with inputs (or token ids) and lengths, then backprop of dy.
struct Pass {
    Floats y, grads, dx;
};

Pass pass(const snn_model *m, int64_t batch, const Floats &x, const Ints &ids, const Ints &lengths, const Floats &dy) {
    Forward fwd = make_forward(m, batch);
    Backward bwd = make_backward(m, batch);
    if (ids.empty()) {
        EXPECT_EQ(snn_set_input_gradient(bwd.get(), 1), SNN_OK);
        EXPECT_EQ(snn_set_inputs(fwd.get(), x.data(), x.size()), SNN_OK) << snn_last_error();
    } else {
        EXPECT_EQ(snn_set_tokens(fwd.get(), ids.data(), ids.size()), SNN_OK) << snn_last_error();
    }
    if (!lengths.empty()) {
        EXPECT_EQ(snn_set_lengths(fwd.get(), lengths.data(), lengths.size()), SNN_OK) << snn_last_error();
    }
    EXPECT_EQ(snn_forward(fwd.get(), m), SNN_OK) << snn_last_error();
    Pass p;
    p.y.resize(size_t(batch) * output_size(m));
    EXPECT_EQ(snn_get_outputs(fwd.get(), p.y.data(), p.y.size()), SNN_OK);
    EXPECT_EQ(snn_backprop_with_output_gradient(bwd.get(), fwd.get(), m, dy.data(), dy.size()), SNN_OK)
        << snn_last_error();
    p.grads = gradients(bwd.get(), m);
    if (ids.empty()) {
        p.dx.resize(x.size());
        EXPECT_EQ(snn_get_input_gradients(bwd.get(), p.dx.data(), p.dx.size()), SNN_OK);
    }
    return p;
}

Model with_params(const std::string &spec, uint64_t seed) {
    Model m = make_model(spec);
    Random rng(seed);
    const Floats p = rng.uniform_vector(param_count(m.get()), -1.0f, 1.0f);
    EXPECT_EQ(snn_set_parameters(m.get(), p.data(), p.size()), SNN_OK);
    return m;
}

// y[s][t] = W[id]; dW[v] = the sum of dy over the steps of id v; the pad
// row's gradient is 0 though it is looked up.
TEST(Embedding, LooksUpRowsAndScatterAddsTheirGradient) {
    Model m = make_model("input tokens 3 vocab=4; embedding 2 pad=3");
    const Floats w = {0, 1, 10, 11, 20, 21, 30, 31};  // row v = [10 v, 10 v + 1]
    ASSERT_EQ(snn_set_parameters(m.get(), w.data(), w.size()), SNN_OK);
    const Ints ids = {2, 0, 2, 3, 2, 1};
    const Floats dy = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    const Pass p = pass(m.get(), 2, {}, ids, {}, dy);
    EXPECT_EQ(p.y, (Floats{20, 21, 0, 1, 20, 21, 30, 31, 20, 21, 10, 11}));
    // id 2 at steps 0, 2 and 4: dy rows 0, 2 and 4; id 0 at step 1; id 1 at
    // step 5; id 3 is the pad.
    EXPECT_EQ(p.grads, (Floats{3, 4, 11, 12, 1 + 5 + 9, 2 + 6 + 10, 0, 0}));
}

// Each mode over lengths 1, T and between, with ties (the first maximum
// takes the gradient).
TEST(Seqpool, PoolsTheValidStepsOfEachSample) {
    const Floats x = {1, 5, 3, 5, 2, 0, 9, 9,  // sample 0: steps 0..3 of 2 features
                      4, 7, 6, 1, 8, 8, 9, 9,  // sample 1
                      2, 3, 2, 4, 9, 9, 9, 9}; // sample 2
    const Ints lengths = {4, 3, 1};
    const Floats dy = {1, 2, 3, 4, 5, 6};
    const struct {
        const char *mode;
        Floats y, dx;
    } cases[] = {
        {"last", {9, 9, 8, 8, 2, 3},
         {0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 3, 4, 0, 0, 5, 6, 0, 0, 0, 0, 0, 0}},
        {"mean", {15.0f / 4, 19.0f / 4, 6, 16.0f / 3, 2, 3},
         {0.25f, 0.5f, 0.25f, 0.5f, 0.25f, 0.5f, 0.25f, 0.5f, 1, 4.0f / 3, 1, 4.0f / 3, 1, 4.0f / 3, 0, 0, 5, 6, 0, 0,
          0, 0, 0, 0}},
        {"max", {9, 9, 8, 8, 2, 3},
         {0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 3, 4, 0, 0, 5, 6, 0, 0, 0, 0, 0, 0}},
    };
    for (const auto &c : cases) {
        Model m = make_model(std::string("input seq 4x2; seqpool ") + c.mode);
        const Pass p = pass(m.get(), 3, x, {}, lengths, dy);
        for (size_t i = 0; i < c.y.size(); ++i) EXPECT_FLOAT_EQ(p.y[i], c.y[i]) << c.mode << " y " << i;
        for (size_t i = 0; i < c.dx.size(); ++i) EXPECT_FLOAT_EQ(p.dx[i], c.dx[i]) << c.mode << " dx " << i;
    }
    // Ties: sample 0's feature 1 is 5 at steps 0 and 1; sample 1's feature 0
    // is 8 at step 2 only within its length (9 at step 3 is padding).
    Model m = make_model("input seq 4x2; seqpool max");
    const Pass p = pass(m.get(), 3, x, {}, {2, 3, 1}, dy);
    EXPECT_EQ(p.y, (Floats{3, 5, 8, 8, 2, 3}));
    EXPECT_EQ(p.dx[1], 2.0f);  // sample 0, step 0, feature 1: the first 5
    EXPECT_EQ(p.dx[3], 0.0f);  // step 1's equal 5
}

// The valid outputs of a padded sample are those of conv1d over the sample
// cut at its length (its steps past the length count as zeros).
TEST(Conv1d, PaddedSamplesGiveTheOutputsOfTheCutSamples) {
    const int64_t steps = 7, channels = 3, out = 4;
    const std::string tail = "x3; conv1d 3 4 tanh pad=2 dilation=2";
    Model full = with_params("input seq " + std::to_string(steps) + tail, 3);
    const Floats params = get_params(full.get());
    Random rng(9);
    const Floats x = rng.uniform_vector(size_t(3 * steps * channels), -2.0f, 2.0f);
    const Ints lengths = {7, 1, 4};
    const Pass p = pass(full.get(), 3, x, {}, lengths, Floats(size_t(3 * steps * out), 1.0f));
    for (int64_t s = 0; s < 3; ++s) {
        const int64_t len = lengths[size_t(s)];
        Model cut = make_model("input seq " + std::to_string(len) + tail);
        ASSERT_EQ(snn_set_parameters(cut.get(), params.data(), params.size()), SNN_OK);
        const Floats xs(x.begin() + s * steps * channels, x.begin() + (s * steps + len) * channels);
        const Pass q = pass(cut.get(), 1, xs, {}, {}, Floats(size_t(len * out), 1.0f));
        for (int64_t i = 0; i < len * out; ++i)
            EXPECT_NEAR(p.y[size_t(s * steps * out + i)], q.y[size_t(i)], 1e-6) << "sample " << s << " value " << i;
    }
}

// Values (or token ids) at padded steps, behind conv1d, posembed and
// seqpool, change neither the outputs nor any gradient, and get no input
// gradient.
TEST(Lengths, PaddedStepsChangeNothingThroughTheSequenceOps) {
    const Ints lengths = {6, 1, 4};
    for (const char *spec : {"input seq 6x3; conv1d 3 4 tanh pad=1; posembed; seqpool max; dense 2",
                             "input seq 6x3; posembed; conv1d 5 4 gelu pad=4 dilation=2; seqpool mean",
                             "input seq 6x3; conv1d 1 3 relu; seqpool last; dense 2"}) {
        SCOPED_TRACE(spec);
        Model m = with_params(spec, 5);
        Random rng(2);
        Floats x = rng.uniform_vector(3 * 18, -1.0f, 1.0f);
        const Floats dy = rng.uniform_vector(3 * output_size(m.get()), -1.0f, 1.0f);
        const Pass a = pass(m.get(), 3, x, {}, lengths, dy);
        for (int64_t s = 0; s < 3; ++s)
            for (int64_t t = lengths[size_t(s)]; t < 6; ++t)
                for (int64_t f = 0; f < 3; ++f) {
                    x[size_t((s * 6 + t) * 3 + f)] = 1e4f;
                    EXPECT_EQ(a.dx[size_t((s * 6 + t) * 3 + f)], 0.0f) << "padded step " << t;
                }
        const Pass b = pass(m.get(), 3, x, {}, lengths, dy);
        EXPECT_EQ(a.y, b.y);
        EXPECT_EQ(a.grads, b.grads);
        EXPECT_EQ(a.dx, b.dx);
    }
    Model m = with_params("input tokens 6 vocab=9; embedding 4 pad=0; conv1d 3 4 pad=1; seqpool mean; dense 2", 7);
    Ints ids = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0};
    const Floats dy = {1, -1, 0.5f, 2, -3, 0.25f};
    const Pass a = pass(m.get(), 3, {}, ids, lengths, dy);
    for (int64_t s = 0; s < 3; ++s)
        for (int64_t t = lengths[size_t(s)]; t < 6; ++t) ids[size_t(s * 6 + t)] = 8;
    const Pass b = pass(m.get(), 3, {}, ids, lengths, dy);
    EXPECT_EQ(a.y, b.y);
    EXPECT_EQ(a.grads, b.grads);
}

}  // namespace

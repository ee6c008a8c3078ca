// Values of batchnorm and dropout computed by hand: batchnorm's outputs and
// running statistics in training and inference mode, dropout's dropped
// fraction, scale and masks. (The gradients of each op, against finite
// differences and PyTorch, are checked by the op harness, tests/ops.)
#include <cmath>

#include "helpers.h"

using namespace snn_test;

namespace {

// One training pass of "input 2; batchnorm" on 4 samples: the outputs use the
// batch's biased variance, the running statistics move a tenth of the way to
// the batch's mean and unbiased variance, and the batch is counted.
TEST(Batchnorm, OneTrainingStepUpdatesRunningStatisticsAsPyTorch) {
    Model model = make_model("input 2; batchnorm");
    Forward fwd = make_forward(model.get(), 4);
    // Feature 0: 1, 2, 3, 6 (mean 3, squares 4+1+0+9 = 14); feature 1: -2, 0, 0, 2 (mean 0, squares 8).
    const std::vector<float> x = {1, -2, 2, 0, 3, 0, 6, 2};
    const std::vector<float> y = run(fwd.get(), model.get(), x);
    const std::vector<float> state = get_state(model.get());
    ASSERT_EQ(state.size(), 5u);
    EXPECT_FLOAT_EQ(state[0], 0.1f * 3.0f);
    EXPECT_FLOAT_EQ(state[1], 0.0f);
    EXPECT_FLOAT_EQ(state[2], 0.9f + 0.1f * 14.0f / 3.0f);
    EXPECT_FLOAT_EQ(state[3], 0.9f + 0.1f * 8.0f / 3.0f);
    EXPECT_EQ(state[4], 1.0f);
    const double var[2] = {14.0 / 4.0, 8.0 / 4.0}, mean[2] = {3.0, 0.0};
    for (size_t i = 0; i < x.size(); ++i)
        EXPECT_NEAR(y[i], (x[i] - mean[i % 2]) / std::sqrt(var[i % 2] + 1e-5), 1e-6) << i;

    // A second pass counts a second batch and moves the statistics again.
    run(fwd.get(), model.get(), x);
    const std::vector<float> again = get_state(model.get());
    EXPECT_FLOAT_EQ(again[0], 0.9f * 0.3f + 0.1f * 3.0f);
    EXPECT_EQ(again[4], 2.0f);
}

// On images the statistics of a channel run over the batch and the pixels.
TEST(Batchnorm, ImageStatisticsRunOverBatchAndPixels) {
    Model model = make_model("input 2x1x2; batchnorm momentum=0.5");
    Forward fwd = make_forward(model.get(), 2);
    // [sample][channel][pixel]: channel 0 holds 1, 3, 5, 7 (mean 4, squares 20);
    // channel 1 holds 2, 2, 2, 6 (mean 3, squares 12).
    const std::vector<float> x = {1, 3, 2, 2, 5, 7, 2, 6};
    const std::vector<float> y = run(fwd.get(), model.get(), x);
    const std::vector<float> state = get_state(model.get());
    ASSERT_EQ(state.size(), 5u);
    EXPECT_FLOAT_EQ(state[0], 0.5f * 4.0f);
    EXPECT_FLOAT_EQ(state[1], 0.5f * 3.0f);
    EXPECT_FLOAT_EQ(state[2], 0.5f + 0.5f * 20.0f / 3.0f);
    EXPECT_FLOAT_EQ(state[3], 0.5f + 0.5f * 12.0f / 3.0f);
    EXPECT_EQ(state[4], 1.0f);
    const double mean[2] = {4.0, 3.0}, var[2] = {5.0, 3.0};
    for (size_t i = 0; i < x.size(); ++i) {
        const size_t c = (i / 2) % 2;
        EXPECT_NEAR(y[i], (x[i] - mean[c]) / std::sqrt(var[c] + 1e-5), 1e-6) << i;
    }
}

// Inference mode normalises with the running statistics and leaves them alone.
TEST(Batchnorm, InferenceUsesRunningStatistics) {
    Model model = make_model("input 2; batchnorm eps=0.01");
    const std::vector<float> state = {0.5f, -1.0f, 4.0f, 0.25f, 7.0f};
    ASSERT_EQ(snn_set_state(model.get(), state.data(), state.size()), SNN_OK);
    Forward fwd = make_forward(model.get(), 1);
    ASSERT_EQ(snn_cache_set_training(fwd.get(), 0), SNN_OK);
    const std::vector<float> y = run(fwd.get(), model.get(), {2.5f, 0.0f});
    EXPECT_NEAR(y[0], 2.0 / std::sqrt(4.01), 1e-6);
    EXPECT_NEAR(y[1], 1.0 / std::sqrt(0.26), 1e-6);
    EXPECT_EQ(get_state(model.get()), state);
}

// Over 100000 elements the dropped fraction is within 4 standard deviations
// of p, and each kept value is x scaled by 1/(1-p) (rounded to float once,
// as PyTorch does).
TEST(Dropout, DropsAFractionPAndScalesTheRest) {
    const double p = 0.3;
    Model model = make_model("input 1000; dropout 0.3");
    Forward fwd = make_forward(model.get(), 100);
    Random rng(3);
    const std::vector<float> x = rng.uniform_vector(100000, 0.5f, 1.5f);
    ASSERT_EQ(snn_cache_set_seed(fwd.get(), 17), SNN_OK);
    const std::vector<float> y = run(fwd.get(), model.get(), x);
    const float keep_scale = float(1.0 / (1.0 - p));
    size_t zeros = 0;
    for (size_t i = 0; i < y.size(); ++i) {
        if (y[i] == 0.0f) {
            ++zeros;
        } else {
            ASSERT_EQ(y[i], x[i] * keep_scale) << i;
            EXPECT_NEAR(y[i], x[i] / (1.0 - p), 1e-6 * std::fabs(y[i])) << i;
        }
    }
    const double n = double(y.size()), sigma = std::sqrt(p * (1.0 - p) / n);
    EXPECT_NEAR(double(zeros) / n, p, 4.0 * sigma);
}

// The mask depends only on the seed and the passes since it was set: equal
// seeds give equal masks, on one cache or two; another seed or the next pass
// gives another mask; inference mode passes the input through.
TEST(Dropout, MasksFollowTheSeed) {
    Model model = make_model("input 50; dropout 0.5");
    Forward a = make_forward(model.get(), 4), b = make_forward(model.get(), 4);
    const std::vector<float> x(200, 1.0f);
    ASSERT_EQ(snn_cache_set_seed(a.get(), 9), SNN_OK);
    const std::vector<float> first = run(a.get(), model.get(), x);
    const std::vector<float> next = run(a.get(), model.get(), x);
    ASSERT_EQ(snn_cache_set_seed(a.get(), 9), SNN_OK);
    EXPECT_EQ(run(a.get(), model.get(), x), first);
    ASSERT_EQ(snn_cache_set_seed(b.get(), 9), SNN_OK);
    EXPECT_EQ(run(b.get(), model.get(), x), first);
    EXPECT_NE(next, first);
    ASSERT_EQ(snn_cache_set_seed(b.get(), 10), SNN_OK);
    EXPECT_NE(run(b.get(), model.get(), x), first);
    ASSERT_EQ(snn_cache_set_training(b.get(), 0), SNN_OK);
    EXPECT_EQ(run(b.get(), model.get(), x), x);
}

}  // namespace

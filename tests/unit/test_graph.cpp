// Training and inference mode on one model at once, and the behaviour of
// the activation arena: values whose lifetime ended share memory without
// changing any result.
#include <cmath>

#include "helpers.h"

using namespace snn_test;

namespace {

// A training cache and an inference cache serve one model at once: the
// inference cache normalises with the running statistics (and leaves them
// alone), the training cache with the batch's (and moves them), and each
// keeps its mode across passes.
TEST(Modes, ATrainingAndAnInferenceCacheServeOneModel) {
    Model m = make_model("input 2; batchnorm; dropout 0.5");
    Forward train = make_forward(m.get(), 4), eval = make_forward(m.get(), 4);
    int32_t on = -1;
    ASSERT_EQ(snn_cache_training(train.get(), &on), SNN_OK);
    EXPECT_EQ(on, 1) << "a cache starts in training mode";
    ASSERT_EQ(snn_cache_set_training(eval.get(), 0), SNN_OK);
    ASSERT_EQ(snn_cache_training(eval.get(), &on), SNN_OK);
    EXPECT_EQ(on, 0);
    const std::vector<float> x = {1, 10, 3, 10, 5, 10, 7, 10};

    // Running statistics start at mean 0, variance 1: inference is x / sqrt(1 + eps).
    std::vector<float> y = run(eval.get(), m.get(), x);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(y[i], float(x[i] / std::sqrt(1.0 + 1e-5)));
    EXPECT_EQ(get_state(m.get()), (std::vector<float>{0, 0, 1, 1, 0}));

    // A training pass: feature 0 has mean 4, biased variance 5, unbiased 20/3.
    y = run(train.get(), m.get(), x);
    const std::vector<float> s = get_state(m.get());
    EXPECT_FLOAT_EQ(s[0], 0.4f);
    EXPECT_FLOAT_EQ(s[1], 1.0f);
    EXPECT_FLOAT_EQ(s[2], float(0.9 + 0.1 * 20.0 / 3.0));
    EXPECT_FLOAT_EQ(s[3], 0.9f);  // feature 1 is constant: unbiased variance 0
    EXPECT_EQ(s[4], 1.0f);
    int zeros = 0;
    for (size_t i = 0; i < y.size(); i += 2) {
        const float normalised = float((x[i] - 4.0) / std::sqrt(5.0 + 1e-5));
        if (y[i] == 0.0f)
            ++zeros;
        else
            EXPECT_NEAR(y[i], 2.0f * normalised, 1e-5f) << "kept values are scaled by 1/(1-p)";
    }
    EXPECT_LT(zeros, 4);

    // The inference cache now uses the moved statistics, and never drops.
    y = run(eval.get(), m.get(), x);
    for (size_t i = 0; i < x.size(); i += 2)
        EXPECT_NEAR(y[i], float((x[i] - 0.4) / std::sqrt(double(s[2]) + 1e-5)), 1e-6f);
    EXPECT_EQ(get_state(m.get()), s);
}

TEST(Modes, OnlyZeroAndOneAreModes) {
    Model m = make_model("input 2; dense 2");
    Forward f = make_forward(m.get(), 1);
    EXPECT_EQ(snn_cache_set_training(f.get(), 2), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_cache_set_training(nullptr, 1), SNN_ERR_NULL_ARGUMENT);
    int32_t on = 7;
    EXPECT_EQ(snn_cache_training(f.get(), &on), SNN_OK);
    EXPECT_EQ(on, 1);
}

// One value per channel has no batch variance: refused in training mode
// (as PyTorch refuses it), fine in inference mode.
TEST(Modes, BatchnormNeedsTwoValuesPerChannelToTrain) {
    Model m = make_model("input 3; batchnorm");
    Forward f = make_forward(m.get(), 1);
    const std::vector<float> x = {1, 2, 3};
    ASSERT_EQ(snn_set_inputs(f.get(), x.data(), x.size()), SNN_OK);
    EXPECT_EQ(snn_forward(f.get(), m.get()), SNN_ERR_BATCH);
    EXPECT_NE(std::string(snn_last_error()).find("more than one value per channel"), std::string::npos)
        << snn_last_error();
    EXPECT_EQ(get_state(m.get()), (std::vector<float>{0, 0, 0, 1, 1, 1, 0})) << "the state is untouched";
    ASSERT_EQ(snn_cache_set_training(f.get(), 0), SNN_OK);
    EXPECT_EQ(snn_forward(f.get(), m.get()), SNN_OK);
}

// relu(relu(z) + z) = 2 relu(z), z = x W1 + b1: the arena reuses the
// memory of the add's output (the relu after it keeps only its own output),
// and the model gives the outputs and gradients of "dense 4 relu; dense 2"
// with the second layer's weights doubled.
TEST(Arena, ReusedMemoryChangesNoResult) {
    Model a = make_model("input 3; dense 4 name=h; relu; add h; relu; dense 2");
    Model b = make_model("input 3; dense 4 relu; dense 2");
    const std::vector<float> p = get_params(a.get());
    ASSERT_EQ(p.size(), param_count(b.get()));
    Forward fa = make_forward(a.get(), 5), fb = make_forward(b.get(), 5);
    const std::vector<float> x = {0.5f, -1, 2, 1, 1, -1, 0, 0.25f, 3, -2, 1, 1, 0.5f, 0.5f, -0.5f};
    const std::vector<float> ya = run(fa.get(), a.get(), x);
    std::vector<float> pb = p;
    const size_t w2 = 3 * 4 + 4;
    for (size_t i = w2; i < w2 + 8; ++i) pb[i] = 2.0f * p[i];
    ASSERT_EQ(snn_set_parameters(b.get(), pb.data(), pb.size()), SNN_OK);
    const std::vector<float> yb = run(fb.get(), b.get(), x);
    ASSERT_EQ(ya.size(), yb.size());
    for (size_t i = 0; i < ya.size(); ++i) EXPECT_FLOAT_EQ(ya[i], yb[i]) << i;
    // The gradient of the shared first layer is the same too.
    Backward ba = make_backward(a.get(), 5), bb = make_backward(b.get(), 5);
    const std::vector<float> t(10, 0.5f);
    ASSERT_EQ(snn_set_targets(ba.get(), t.data(), t.size()), SNN_OK);
    ASSERT_EQ(snn_set_targets(bb.get(), t.data(), t.size()), SNN_OK);
    ASSERT_EQ(snn_backprop(ba.get(), fa.get(), a.get(), SNN_LOSS_MSE, nullptr), SNN_OK);
    ASSERT_EQ(snn_backprop(bb.get(), fb.get(), b.get(), SNN_LOSS_MSE, nullptr), SNN_OK);
    const std::vector<float> ga = gradients(ba.get(), a.get()), gb = gradients(bb.get(), b.get());
    for (size_t i = 0; i < w2; ++i) EXPECT_NEAR(ga[i], gb[i], 1e-6f * (1 + std::fabs(gb[i]))) << i;
}

}  // namespace

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

// Two branches of one value through from=, joined by add, are one layer of
// the summed weights: y = (x W1 + b1) + (x W2 + b2) = x (W1 + W2) + (b1 + b2).
// `branched` holds two dense layers of `units` outputs after `prefix` layers
// whose parameters come first; `merged` the same model with one. Outputs,
// the gradients of the prefix, of each branch (both that of the merged
// layer) and of the inputs (summed over both readers of a value) agree.
void expect_branches_sum(const char *branched, const char *merged, size_t prefix, size_t in, size_t units,
                         int64_t batch) {
    Model a = make_model(branched), b = make_model(merged);
    std::vector<float> pa = get_params(a.get());
    const size_t w = in * units, layer = w + units;
    ASSERT_EQ(pa.size(), prefix + 2 * layer) << branched;
    for (size_t i = 0; i < pa.size(); ++i) pa[i] = 0.1f * float(int(i * 37 % 23) - 11);
    ASSERT_EQ(snn_set_parameters(a.get(), pa.data(), pa.size()), SNN_OK);
    std::vector<float> pb(prefix + layer);
    for (size_t i = 0; i < prefix; ++i) pb[i] = pa[i];
    for (size_t i = 0; i < layer; ++i) pb[prefix + i] = pa[prefix + i] + pa[prefix + layer + i];
    ASSERT_EQ(snn_set_parameters(b.get(), pb.data(), pb.size()), SNN_OK);
    std::vector<float> x(size_t(batch) * input_size(a.get()));
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * float(int(i * 13 % 17) - 8);
    Forward fa = make_forward(a.get(), batch), fb = make_forward(b.get(), batch);
    const std::vector<float> ya = run(fa.get(), a.get(), x), yb = run(fb.get(), b.get(), x);
    ASSERT_EQ(ya.size(), yb.size());
    for (size_t i = 0; i < ya.size(); ++i) EXPECT_NEAR(ya[i], yb[i], 1e-5f * (1 + std::fabs(yb[i]))) << i;
    Backward ba = make_backward(a.get(), batch), bb = make_backward(b.get(), batch);
    const std::vector<float> t(ya.size(), 0.5f);
    for (snn_backward_cache *g : {ba.get(), bb.get()}) {
        ASSERT_EQ(snn_set_targets(g, t.data(), t.size()), SNN_OK);
        ASSERT_EQ(snn_set_input_gradient(g, 1), SNN_OK);
    }
    ASSERT_EQ(snn_backprop(ba.get(), fa.get(), a.get(), SNN_LOSS_MSE, nullptr), SNN_OK) << snn_last_error();
    ASSERT_EQ(snn_backprop(bb.get(), fb.get(), b.get(), SNN_LOSS_MSE, nullptr), SNN_OK) << snn_last_error();
    const std::vector<float> ga = gradients(ba.get(), a.get()), gb = gradients(bb.get(), b.get());
    auto near = [](float u, float v) { return std::fabs(u - v) <= 1e-5f * (1 + std::fabs(v)); };
    for (size_t i = 0; i < prefix; ++i) EXPECT_PRED2(near, ga[i], gb[i]) << "prefix " << i;
    for (size_t i = 0; i < layer; ++i) {
        EXPECT_PRED2(near, ga[prefix + i], gb[prefix + i]) << "first branch " << i;
        EXPECT_PRED2(near, ga[prefix + layer + i], gb[prefix + i]) << "second branch " << i;
    }
    std::vector<float> dxa(x.size()), dxb(x.size());
    ASSERT_EQ(snn_get_input_gradients(ba.get(), dxa.data(), dxa.size()), SNN_OK);
    ASSERT_EQ(snn_get_input_gradients(bb.get(), dxb.data(), dxb.size()), SNN_OK);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_PRED2(near, dxa[i], dxb[i]) << "input " << i;
    bool moved = false;
    for (float g : dxa) moved = moved || g != 0.0f;
    EXPECT_TRUE(moved);
}

// The inputs read by two layers (the first directly, the second through
// from=x): their gradient is the sum of both.
TEST(Branches, TwoBranchesOfTheInputsAreOneLayerOfSummedWeights) {
    expect_branches_sum("input 3 name=x; dense 4 name=a; dense 4 from=x; add a", "input 3; dense 4", 0, 3, 4, 5);
}

// A value of 64 features read by two layers: the second gradient to reach
// it is made in the backward cache's scratch, which must hold 64 features
// per sample though no layer with two inputs is that large (add's are 2).
TEST(Branches, AWideValueReadByTwoLayersSumsItsGradients) {
    expect_branches_sum("input 3; dense 64 tanh name=h; dense 2 name=p; dense 2 from=h; add p",
                        "input 3; dense 64 tanh; dense 2", 3 * 64 + 64, 64, 2, 5);
}

// flatten aliases its input's memory: a flattened value read by a later
// layer while a convolution from= the unflattened one reads it too gives
// the gradients of the same model with the convolution before the flatten
// read twice by name.
TEST(Branches, FlattenOfAValueAnotherLayerReadsKeepsBothGradients) {
    Model a = make_model("input 3x3x2; conv 1 2 tanh name=c; flatten name=f; conv 3 2 pad=1 from=c; flatten; add f");
    Model b = make_model("input 3x3x2; conv 1 2 tanh name=c; conv 3 2 pad=1; flatten name=g; flatten from=c; add g");
    const std::vector<float> p = get_params(a.get());
    ASSERT_EQ(snn_set_parameters(b.get(), p.data(), p.size()), SNN_OK);
    std::vector<float> x(2 * 18);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * float(int(i * 7 % 11) - 5);
    Forward fa = make_forward(a.get(), 2), fb = make_forward(b.get(), 2);
    const std::vector<float> ya = run(fa.get(), a.get(), x), yb = run(fb.get(), b.get(), x);
    ASSERT_EQ(ya, yb);
    Backward ba = make_backward(a.get(), 2), bb = make_backward(b.get(), 2);
    const std::vector<float> t(ya.size(), 0.5f);
    ASSERT_EQ(snn_set_targets(ba.get(), t.data(), t.size()), SNN_OK);
    ASSERT_EQ(snn_set_targets(bb.get(), t.data(), t.size()), SNN_OK);
    ASSERT_EQ(snn_backprop(ba.get(), fa.get(), a.get(), SNN_LOSS_MSE, nullptr), SNN_OK);
    ASSERT_EQ(snn_backprop(bb.get(), fb.get(), b.get(), SNN_LOSS_MSE, nullptr), SNN_OK);
    const std::vector<float> ga = gradients(ba.get(), a.get()), gb = gradients(bb.get(), b.get());
    ASSERT_EQ(ga.size(), gb.size());
    // dL/dc = the flattened gradient + the convolution's input gradient, in
    // either order: the first layer's gradients agree to rounding.
    for (size_t i = 0; i < ga.size(); ++i) EXPECT_NEAR(ga[i], gb[i], 1e-6f * (1 + std::fabs(gb[i]))) << i;
    double first = 0;
    for (size_t i = 0; i < 2 * 2 + 2; ++i) first += std::fabs(ga[i]);
    EXPECT_GT(first, 0.0);
}

}  // namespace

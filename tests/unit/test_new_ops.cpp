// The activation layers (gelu and silu also inline in dense and conv),
// softmax, batchnorm, layernorm and dropout through the public API:
// finite-difference checks of their gradients in training and inference
// mode, and their values where they can be computed by hand (batchnorm's
// running statistics, dropout's mask).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "helpers.h"

using namespace snn_test;

namespace {

struct Problem {
    const char *name;
    const char *spec;
    int64_t batch;
    float eps;
    bool training;
};

std::ostream &operator<<(std::ostream &os, const Problem &p) {
    return os << p.spec << (p.training ? " (training)" : " (inference)");
}

// The MSE loss recomputed in double from the outputs.
double mse_of(const std::vector<float> &y, const std::vector<float> &targets) {
    double sum = 0.0;
    for (size_t i = 0; i < y.size(); ++i) sum += (double(y[i]) - targets[i]) * (double(y[i]) - targets[i]);
    return sum / double(y.size());
}

class NewOpGradient : public ::testing::TestWithParam<Problem> {};

// Every evaluation starts from the same state (a training pass moves
// batchnorm's running statistics) and the same dropout seed (so the mask
// is the same), so the loss is a function of the parameters and inputs alone.
TEST_P(NewOpGradient, MatchesCentralDifferences) {
    const Problem &p = GetParam();
    Model model = make_model(p.spec);
    const size_t k = output_size(model.get()), features = input_size(model.get());
    Random rng(42);

    // Away from the initial values (norm weights 1, biases 0, running
    // statistics 0 and 1), so that each one's role is checked.
    std::vector<float> params = get_params(model.get());
    for (float &v : params) v += rng.uniform(-0.2f, 0.2f);
    ASSERT_EQ(snn_set_parameters(model.get(), params.data(), params.size()), SNN_OK);
    size_t state_count = 0;
    ASSERT_EQ(snn_state_count(model.get(), &state_count), SNN_OK);
    std::vector<float> state = rng.uniform_vector(state_count, 0.5f, 1.5f);
    int64_t layers = 0;
    ASSERT_EQ(snn_model_layer_count(model.get(), &layers), SNN_OK);
    for (int64_t l = 1; l < layers; ++l) {  // num_batches_tracked, last of a layer's state, is a count
        size_t offset = 0, count = 0;
        ASSERT_EQ(snn_model_layer_state(model.get(), l, &offset, &count), SNN_OK);
        if (count) state[offset + count - 1] = 3.0f;
    }
    ASSERT_EQ(snn_set_state(model.get(), state.data(), state.size()), SNN_OK);

    std::vector<float> x = rng.uniform_vector(size_t(p.batch) * features, -1.0f, 1.0f);
    const std::vector<float> targets = rng.uniform_vector(size_t(p.batch) * k, -1.0f, 1.0f);

    Forward fwd = make_forward(model.get(), p.batch);
    Backward bwd = make_backward(model.get(), p.batch);
    ASSERT_EQ(snn_cache_set_training(fwd.get(), p.training ? 1 : 0), SNN_OK);
    ASSERT_EQ(snn_set_input_gradient(bwd.get(), 1), SNN_OK);
    ASSERT_EQ(snn_set_targets(bwd.get(), targets.data(), targets.size()), SNN_OK);

    auto outputs = [&]() {
        EXPECT_EQ(snn_set_state(model.get(), state.data(), state.size()), SNN_OK);
        EXPECT_EQ(snn_cache_set_seed(fwd.get(), 5), SNN_OK);
        return run(fwd.get(), model.get(), x);
    };
    const std::vector<float> y = outputs();
    float loss = 0.0f;
    ASSERT_EQ(snn_backprop(bwd.get(), fwd.get(), model.get(), SNN_LOSS_MSE, &loss), SNN_OK) << snn_last_error();
    EXPECT_NEAR(loss, mse_of(y, targets), 1e-6 * (1.0 + std::fabs(loss)));
    const std::vector<float> grads = gradients(bwd.get(), model.get());
    std::vector<float> input_grads(x.size());
    ASSERT_EQ(snn_get_input_gradients(bwd.get(), input_grads.data(), input_grads.size()), SNN_OK);

    double worst = 0.0;
    auto loss_at = [&]() { return mse_of(outputs(), targets); };
    for (size_t i = 0; i < params.size(); ++i) {
        const float saved = params[i];
        params[i] = saved + p.eps;
        EXPECT_EQ(snn_set_parameters(model.get(), params.data(), params.size()), SNN_OK);
        const double up = loss_at();
        params[i] = saved - p.eps;
        EXPECT_EQ(snn_set_parameters(model.get(), params.data(), params.size()), SNN_OK);
        const double down = loss_at();
        params[i] = saved;
        EXPECT_EQ(snn_set_parameters(model.get(), params.data(), params.size()), SNN_OK);
        const double numeric = (up - down) / (double(saved + p.eps) - double(saved - p.eps));
        worst = std::max(worst, expect_gradient_close("parameter", i, numeric, grads[i]));
    }
    for (size_t i = 0; i < x.size(); ++i) {
        const float saved = x[i];
        x[i] = saved + p.eps;
        const double up = loss_at();
        x[i] = saved - p.eps;
        const double down = loss_at();
        x[i] = saved;
        const double numeric = (up - down) / (double(saved + p.eps) - double(saved - p.eps));
        worst = std::max(worst, expect_gradient_close("input", i, numeric, input_grads[i]));
    }
    std::printf("  %zu parameters, %zu inputs: worst error %.2f of the tolerance\n", params.size(), x.size(),
                worst);
}

const Problem kProblems[] = {
    // Activations as layers of their own, on vectors and on images.
    {"relu", "input 5; dense 6; relu; dense 3", 3, 1e-3f, true},
    {"leaky_relu", "input 5; dense 6; leaky_relu; dense 3", 3, 1e-3f, true},
    {"tanh", "input 5; dense 6; tanh; dense 3", 3, 1e-2f, true},
    {"sigmoid", "input 5; dense 6; sigmoid; dense 3", 3, 1e-2f, true},
    {"gelu", "input 5; dense 6; gelu; dense 3", 3, 1e-2f, true},
    {"silu", "input 5; dense 6; silu; dense 3", 3, 1e-2f, true},
    {"gelu_image", "input 4x4x2; conv 3 3 pad=1; gelu", 2, 1e-2f, true},
    {"silu_image", "input 4x4x2; conv 3 3 pad=1; silu", 2, 1e-2f, true},
    // gelu and silu fused into dense and conv.
    {"dense_gelu", "input 5; dense 5 gelu; dense 3", 3, 1e-2f, true},
    {"dense_silu", "input 5; dense 5 silu; dense 3", 3, 1e-2f, true},
    {"conv_gelu", "input 5x5x2; conv 3 4 gelu", 2, 1e-2f, true},
    {"conv_silu", "input 5x5x2; conv 3 4 silu", 2, 1e-2f, true},
    // Softmax over the features of vectors and the channels of each pixel.
    {"softmax_vector", "input 5; dense 4; softmax", 3, 1e-2f, true},
    {"softmax_image", "input 4x3x2; conv 3 4 pad=1; softmax", 2, 1e-2f, true},
    // Batchnorm with batch statistics (training) and running ones (inference).
    // The norms take smaller steps: their curvature is larger.
    {"batchnorm_vector_training", "input 6; dense 5; batchnorm; tanh; dense 3", 4, 3e-3f, true},
    {"batchnorm_vector_inference", "input 6; dense 5; batchnorm; tanh; dense 3", 4, 3e-3f, false},
    {"batchnorm_image_training", "input 4x4x2; conv 3 3; batchnorm; tanh; flatten; dense 2", 2, 3e-3f, true},
    {"batchnorm_image_inference", "input 4x4x2; conv 3 3; batchnorm; tanh; flatten; dense 2", 2, 3e-3f,
     false},
    {"batchnorm_output", "input 4; dense 3; batchnorm momentum=0", 5, 3e-3f, true},
    // Layernorm over each sample's features, or over its channels and pixels.
    {"layernorm_vector", "input 6; dense 5; layernorm; tanh; dense 3", 3, 3e-3f, true},
    {"layernorm_vector_inference", "input 6; dense 5; layernorm; tanh; dense 3", 3, 3e-3f, false},
    {"layernorm_image", "input 4x4x2; conv 3 3 pad=1; layernorm; tanh; flatten; dense 2", 2, 3e-3f, true},
    // Dropout with a fixed mask (training) and as the identity (inference).
    {"dropout_training", "input 6; dense 8 tanh; dropout 0.3; dense 3", 3, 1e-2f, true},
    {"dropout_inference", "input 6; dense 8 tanh; dropout 0.3; dense 3", 3, 1e-2f, false},
    {"dropout_image", "input 4x4x2; conv 3 3 pad=1; dropout 0.5; tanh", 2, 1e-2f, true},
    // The graph: gradients that reach a value from several consumers are
    // summed (a value read by three layers; the inputs read by an add; a
    // value read both through flatten's alias and by concat), and flow back
    // through both sides of concat.
    {"residual_block", "input 4x4x2; conv 3 2 pad=1 name=a; batchnorm; relu; conv 3 2 pad=1 nobias; batchnorm; "
     "add a; relu; globalavgpool; flatten; dense 3", 3, 3e-3f, true},
    {"three_readers", "input 5; dense 4 tanh name=h; dense 4 tanh; add h; concat h; dense 2", 3, 1e-2f, true},
    {"add_to_the_inputs", "input 4 name=x; dense 4 tanh; add x; dense 2", 3, 1e-2f, true},
    {"concat_branches", "input 3x3x2 name=x; conv 3 3 pad=1 tanh; concat x; conv 1 2; flatten; dense 2", 2,
     1e-2f, true},
    {"alias_and_concat", "input 2x2x2; conv 1 2 tanh; flatten name=f; dense 8 tanh; concat f; dense 3", 2, 1e-2f,
     true},
};

INSTANTIATE_TEST_SUITE_P(Ops, NewOpGradient, ::testing::ValuesIn(kProblems),
                         [](const ::testing::TestParamInfo<Problem> &info) { return info.param.name; });

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

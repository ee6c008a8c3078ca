// Finite-difference checks of backpropagation through the public API: for
// every activation, both losses, every layer kind and the inputs, the
// gradient snn computes equals the central difference
//     (L(p + eps) - L(p - eps)) / (2 eps)
// of the loss, which the test evaluates in double from snn's float outputs.
// Parameters and inputs are random and fixed by a seed, so points where
// relu or max pooling have a kink are not hit (the values are distinct).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "helpers.h"

using namespace snn_test;

namespace {

struct Problem {
    const char *name;
    const char *spec;
    snn_loss loss;
    int64_t batch;
    float eps;
};

std::ostream &operator<<(std::ostream &os, const Problem &p) { return os << p.spec; }

// The loss recomputed in double from the outputs.
double loss_of(const Problem &p, const std::vector<float> &y, size_t k,
               const std::vector<float> &targets, const std::vector<int32_t> &labels) {
    double sum = 0.0;
    if (p.loss == SNN_LOSS_MSE) {
        for (size_t i = 0; i < y.size(); ++i) sum += (double(y[i]) - targets[i]) * (double(y[i]) - targets[i]);
        return sum / double(y.size());
    }
    for (int64_t i = 0; i < p.batch; ++i) {
        const float *row = y.data() + i * k;
        const double m = *std::max_element(row, row + k);
        double s = 0.0;
        for (size_t j = 0; j < k; ++j) s += std::exp(row[j] - m);
        sum += m + std::log(s) - row[labels[i]];
    }
    return sum / double(p.batch);
}

class GradientCheck : public ::testing::TestWithParam<Problem> {};

TEST_P(GradientCheck, MatchesCentralDifferences) {
    const Problem &p = GetParam();
    Model model = make_model(p.spec);
    const size_t k = output_size(model.get()), features = input_size(model.get());
    Random rng(42);

    // Biases start at zero; give them values so that their role is checked too.
    ASSERT_EQ(snn_model_init(model.get(), 3), SNN_OK);
    float *params = nullptr;
    size_t count = 0;
    ASSERT_EQ(snn_parameters(model.get(), &params, &count), SNN_OK);
    int64_t layers = 0;
    ASSERT_EQ(snn_model_layer_count(model.get(), &layers), SNN_OK);
    for (int64_t l = 0; l < layers; ++l) {
        size_t wo, wc, bo, bc;
        ASSERT_EQ(snn_model_layer_params(model.get(), l, &wo, &wc, &bo, &bc), SNN_OK);
        for (size_t i = 0; i < bc; ++i) params[bo + i] = rng.uniform(-0.2f, 0.2f);
    }

    std::vector<float> x = rng.uniform_vector(size_t(p.batch) * features, -1.0f, 1.0f);
    const std::vector<float> targets = rng.uniform_vector(size_t(p.batch) * k, -1.0f, 1.0f);
    std::vector<int32_t> labels(size_t(p.batch));
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = int32_t((i * 7 + 1) % k);

    Forward fwd = make_forward(model.get(), p.batch);
    Backward bwd = make_backward(model.get(), p.batch);
    ASSERT_EQ(snn_set_input_gradient(bwd.get(), 1), SNN_OK);
    if (p.loss == SNN_LOSS_MSE)
        ASSERT_EQ(snn_set_targets(bwd.get(), targets.data(), targets.size()), SNN_OK);
    else
        ASSERT_EQ(snn_set_labels(bwd.get(), labels.data(), labels.size()), SNN_OK);

    const std::vector<float> y = run(fwd.get(), model.get(), x);
    float loss = 0.0f;
    ASSERT_EQ(snn_backprop(bwd.get(), fwd.get(), model.get(), p.loss, &loss), SNN_OK) << snn_last_error();
    EXPECT_NEAR(loss, loss_of(p, y, k, targets, labels), 1e-6 * (1.0 + std::fabs(loss)));
    const std::vector<float> grads = gradients(bwd.get(), model.get());
    std::vector<float> input_grads(x.size());
    ASSERT_EQ(snn_get_input_gradients(bwd.get(), input_grads.data(), input_grads.size()), SNN_OK);

    double worst = 0.0;
    auto loss_at = [&]() { return loss_of(p, run(fwd.get(), model.get(), x), k, targets, labels); };
    for (size_t i = 0; i < count; ++i) {
        const float saved = params[i];
        params[i] = saved + p.eps;
        const double up = loss_at();
        params[i] = saved - p.eps;
        const double down = loss_at();
        params[i] = saved;
        const double numeric = (up - down) / (2.0 * double(p.eps));
        worst = std::max(worst, expect_gradient_close("parameter", i, numeric, grads[i]));
    }
    for (size_t i = 0; i < x.size(); ++i) {
        const float saved = x[i];
        x[i] = saved + p.eps;
        const double up = loss_at();
        x[i] = saved - p.eps;
        const double down = loss_at();
        x[i] = saved;
        const double numeric = (up - down) / (2.0 * double(p.eps));
        worst = std::max(worst, expect_gradient_close("input", i, numeric, input_grads[i]));
    }
    std::printf("  %zu parameters, %zu inputs: worst error %.2f of the tolerance\n", count, x.size(), worst);
}

const Problem kProblems[] = {
    // Every activation in a dense layer, with the MSE loss.
    {"dense_identity", "input 5; dense 4; dense 3", SNN_LOSS_MSE, 3, 1e-2f},
    {"dense_relu", "input 5; dense 6 relu; dense 3", SNN_LOSS_MSE, 3, 1e-3f},
    {"dense_leaky_relu", "input 5; dense 6 leaky_relu; dense 3", SNN_LOSS_MSE, 3, 1e-3f},
    {"dense_tanh", "input 5; dense 6 tanh; dense 3", SNN_LOSS_MSE, 3, 1e-2f},
    {"dense_sigmoid", "input 5; dense 6 sigmoid; dense 3 sigmoid", SNN_LOSS_MSE, 3, 1e-2f},
    {"dense_nobias", "input 5; dense 6 tanh nobias; dense 3 nobias", SNN_LOSS_MSE, 2, 1e-2f},
    // Cross-entropy on logits.
    {"crossentropy", "input 6; dense 8 tanh; dense 4", SNN_LOSS_LOGIT_CROSSENTROPY, 5, 1e-2f},
    {"crossentropy_leaky_relu", "input 6; dense 8 leaky_relu; dense 5",
     SNN_LOSS_LOGIT_CROSSENTROPY, 4, 1e-3f},
    // Convolutions: stride, padding, non-square kernels, 1x1, whole-image kernel.
    {"conv_stride1_pad0", "input 5x5x2; conv 3x3 3 tanh", SNN_LOSS_MSE, 2, 1e-2f},
    {"conv_stride2_pad1", "input 6x6x2; conv 3x3 3 sigmoid stride=2 pad=1", SNN_LOSS_MSE, 2, 1e-2f},
    {"conv_nonsquare", "input 6x5x2; conv 3x2 2 tanh stride=2x1 pad=1x0", SNN_LOSS_MSE, 2, 1e-2f},
    {"conv_1x1_relu", "input 3x3x3; conv 1 4 relu", SNN_LOSS_MSE, 2, 1e-3f},
    {"conv_whole_image_nobias", "input 4x4x2; conv 4x4 3 nobias", SNN_LOSS_MSE, 3, 1e-2f},
    // Pooling, flatten, and a dense head on images.
    {"maxpool", "input 6x6x2; conv 3x3 2 tanh pad=1; maxpool 2; flatten; dense 3",
     SNN_LOSS_LOGIT_CROSSENTROPY, 2, 1e-3f},
    {"maxpool_first_overlapping", "input 5x6x2; maxpool 2x3 stride=1; flatten; dense 2",
     SNN_LOSS_MSE, 2, 1e-3f},
    {"avgpool_floor", "input 7x7x2; avgpool 3; flatten; dense 3", SNN_LOSS_MSE, 2, 1e-2f},
    {"avgpool_overlapping", "input 5x5x1; conv 2x2 2 sigmoid; avgpool 2 stride=1", SNN_LOSS_MSE, 2,
     1e-2f},
    {"flatten_first", "input 3x2x2; flatten; dense 3 tanh", SNN_LOSS_MSE, 2, 1e-2f},
    {"cnn", "input 8x8x2; conv 3x3 3 relu pad=1; maxpool 2; conv 3x3 4 tanh; avgpool 2; flatten; dense 3",
     SNN_LOSS_LOGIT_CROSSENTROPY, 3, 1e-3f},
};

INSTANTIATE_TEST_SUITE_P(Layers, GradientCheck, ::testing::ValuesIn(kProblems),
                         [](const ::testing::TestParamInfo<Problem> &info) { return info.param.name; });

// A caller-supplied output gradient of 2 (y - t) / N is the MSE's own: both
// routes give the same parameter and input gradients.
TEST(OutputGradient, EqualsMseWhenGivenItsDerivative) {
    Model model = make_model("input 4x4x1; conv 3x3 2 tanh; flatten; dense 3 sigmoid");
    const int64_t batch = 3;
    Random rng(7);
    const std::vector<float> x = rng.uniform_vector(batch * 16, -1.0f, 1.0f);
    const std::vector<float> t = rng.uniform_vector(batch * 3, 0.0f, 1.0f);
    Forward fwd = make_forward(model.get(), batch);
    Backward mse = make_backward(model.get(), batch), custom = make_backward(model.get(), batch);
    ASSERT_EQ(snn_set_input_gradient(mse.get(), 1), SNN_OK);
    ASSERT_EQ(snn_set_input_gradient(custom.get(), 1), SNN_OK);

    const std::vector<float> y = run(fwd.get(), model.get(), x);
    ASSERT_EQ(snn_set_targets(mse.get(), t.data(), t.size()), SNN_OK);
    ASSERT_EQ(snn_backprop(mse.get(), fwd.get(), model.get(), SNN_LOSS_MSE, nullptr), SNN_OK);
    std::vector<float> dy(y.size());
    for (size_t i = 0; i < y.size(); ++i) dy[i] = 2.0f * (y[i] - t[i]) / float(y.size());
    ASSERT_EQ(snn_backprop_with_output_gradient(custom.get(), fwd.get(), model.get(), dy.data(), dy.size()),
              SNN_OK) << snn_last_error();

    const std::vector<float> g_mse = gradients(mse.get(), model.get());
    const std::vector<float> g_custom = gradients(custom.get(), model.get());
    for (size_t i = 0; i < g_mse.size(); ++i) EXPECT_NEAR(g_custom[i], g_mse[i], 1e-7) << i;
    std::vector<float> dx_mse(x.size()), dx_custom(x.size());
    ASSERT_EQ(snn_get_input_gradients(mse.get(), dx_mse.data(), dx_mse.size()), SNN_OK);
    ASSERT_EQ(snn_get_input_gradients(custom.get(), dx_custom.data(), dx_custom.size()), SNN_OK);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(dx_custom[i], dx_mse[i], 1e-7) << i;
}

// With output gradient g, the parameter gradient is that of sum(g * y):
// checked against central differences of that sum.
TEST(OutputGradient, IsTheGradientOfTheWeightedOutputs) {
    Model model = make_model("input 3; dense 4 tanh; dense 2");
    const int64_t batch = 2;
    Random rng(11);
    const std::vector<float> x = rng.uniform_vector(batch * 3, -1.0f, 1.0f);
    const std::vector<float> g = rng.uniform_vector(batch * 2, -1.0f, 1.0f);
    Forward fwd = make_forward(model.get(), batch);
    Backward bwd = make_backward(model.get(), batch);
    run(fwd.get(), model.get(), x);
    ASSERT_EQ(snn_backprop_with_output_gradient(bwd.get(), fwd.get(), model.get(), g.data(), g.size()),
              SNN_OK);
    const std::vector<float> analytic = gradients(bwd.get(), model.get());

    float *params = nullptr;
    size_t count = 0;
    ASSERT_EQ(snn_parameters(model.get(), &params, &count), SNN_OK);
    auto weighted = [&]() {
        const std::vector<float> y = run(fwd.get(), model.get(), x);
        double s = 0.0;
        for (size_t i = 0; i < y.size(); ++i) s += double(g[i]) * y[i];
        return s;
    };
    const float eps = 1e-2f;
    for (size_t i = 0; i < count; ++i) {
        const float saved = params[i];
        params[i] = saved + eps;
        const double up = weighted();
        params[i] = saved - eps;
        const double down = weighted();
        params[i] = saved;
        expect_gradient_close("parameter", i, (up - down) / (2.0 * eps), analytic[i]);
    }
}

}  // namespace

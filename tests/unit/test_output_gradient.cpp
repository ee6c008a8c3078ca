// The caller-supplied output gradient (snn_backprop_with_output_gradient):
// with the MSE's own derivative it gives the MSE's gradients, and in general
// the gradients of the outputs weighted by it. (The gradients of each op
// are checked by the op harness, tests/ops.)
#include <cmath>

#include "helpers.h"

using namespace snn_test;

namespace {

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

// The losses that compare outputs with float targets, through the public
// API: values and output gradients at chosen residuals (the model is the
// identity, so the outputs are the inputs and the input gradient is dL/dy),
// finite differences through a dense model, and their parameters.
#include <cfloat>
#include <cmath>
#include <functional>

#include "helpers.h"

using namespace snn_test;

namespace {

// One loss's per-element term and derivative in double, the reference.
struct Reference {
    snn_loss loss;
    std::function<double(double y, double t, double p)> term, grad;
    // Absolute error of a float gradient term before the division by the
    // count, beyond 2 ulp of it (BCE's sigmoid(x) - t cancels near t).
    double grad_abs = 0.0;
};

double huber(double y, double t, double delta) {
    const double r = y - t, a = std::fabs(r);
    return a < delta ? 0.5 * r * r : delta * (a - 0.5 * delta);
}
double huber_grad(double y, double t, double delta) { return std::max(-delta, std::min(delta, y - t)); }

const Reference kHuber{SNN_LOSS_HUBER, huber, huber_grad};

double smooth_l1(double y, double t, double beta) {
    const double r = y - t, a = std::fabs(r);
    return a < beta ? 0.5 * r * r / beta : a - 0.5 * beta;
}
double smooth_l1_grad(double y, double t, double beta) {
    const double r = y - t;
    return r < -beta ? -1.0 : r > beta ? 1.0 : beta > 0 ? r / beta : 0.0;
}

const Reference kSmoothL1{SNN_LOSS_SMOOTH_L1, smooth_l1, smooth_l1_grad};

double bce(double x, double t, double) { return std::max(x, 0.0) - x * t + std::log1p(std::exp(-std::fabs(x))); }
double bce_grad(double x, double t, double) { return 1.0 / (1.0 + std::exp(-x)) - t; }

const Reference kBce{SNN_LOSS_BCE_WITH_LOGITS, bce, bce_grad, 1.2e-7};

// A model whose outputs are its inputs: dense k -> k with W = I, b = 0.
Model identity_model(size_t k) {
    Model m = make_model("input " + std::to_string(k) + "; dense " + std::to_string(k));
    std::vector<float> p(k * k + k, 0.0f);
    for (size_t i = 0; i < k; ++i) p[i * k + i] = 1.0f;
    EXPECT_EQ(snn_set_parameters(m.get(), p.data(), p.size()), SNN_OK);
    return m;
}

struct Result {
    float loss;
    std::vector<float> dy;
};

// The loss and dL/dy of outputs y [batch][k] against targets t.
Result loss_at(const Reference &ref, double param, const std::vector<float> &y, const std::vector<float> &t,
               size_t k) {
    const int64_t batch = int64_t(y.size() / k);
    Model m = identity_model(k);
    Forward fwd = make_forward(m.get(), batch);
    Backward bwd = make_backward(m.get(), batch);
    if (!std::isnan(param))
        EXPECT_EQ(snn_set_loss_parameter(bwd.get(), ref.loss, param), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_set_input_gradient(bwd.get(), 1), SNN_OK);
    EXPECT_EQ(run(fwd.get(), m.get(), y), y);
    EXPECT_EQ(snn_set_targets(bwd.get(), t.data(), t.size()), SNN_OK) << snn_last_error();
    Result r{0.0f, std::vector<float>(y.size())};
    EXPECT_EQ(snn_backprop(bwd.get(), fwd.get(), m.get(), ref.loss, &r.loss), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_get_input_gradients(bwd.get(), r.dy.data(), r.dy.size()), SNN_OK);
    return r;
}

// The mean loss and each dL/dy against the double reference: the loss
// within 1e-6 relative (summed in double, each term in float), dy within
// 2 ulp (one rounding of the term, one of the division).
void expect_matches_reference(const Reference &ref, double param, const std::vector<float> &y,
                              const std::vector<float> &t, size_t k) {
    const Result r = loss_at(ref, param, y, t, k);
    double sum = 0.0;
    const double count = double(y.size());
    for (size_t i = 0; i < y.size(); ++i) {
        sum += ref.term(y[i], t[i], param);
        const double want = ref.grad(y[i], t[i], param) / count;
        EXPECT_NEAR(r.dy[i], want, 2.5e-7 * std::fabs(want) + ref.grad_abs / count + 1e-45)
            << "dy " << i << ": y " << y[i] << ", t " << t[i] << ", parameter " << param;
    }
    EXPECT_NEAR(r.loss, sum / count, 1e-6 * sum / count + 1e-45) << "parameter " << param;
}

TEST(Huber, ValuesAndGradientsOnBothSidesOfDeltaAndAtIt) {
    // Residuals below, at and above delta = 1 in both directions, zero, tiny.
    const std::vector<float> y = {-3.0f, -1.0f, -0.5f, 0.0f, 0.25f, 1.0f, 2.5f, 1e-3f};
    const std::vector<float> t(y.size(), 0.0f);
    expect_matches_reference(kHuber, 1.0, y, t, 4);
    // At |r| = delta both branches agree: 0.5 and a gradient of delta.
    const Result r = loss_at(kHuber, 1.0, {1.0f, -1.0f}, {0.0f, 0.0f}, 2);
    EXPECT_EQ(r.loss, 0.5f);
    EXPECT_EQ(r.dy, (std::vector<float>{0.5f, -0.5f}));
}

TEST(Huber, TinyAndHugeDelta) {
    const std::vector<float> y = {-2e-6f, -1e-6f, 5e-7f, 3.0f, -1e4f, 1e-7f};
    const std::vector<float> t = {0.0f, 0.0f, 0.0f, 1.0f, 2.0f, 0.0f};
    for (double delta : {1e-6, 0.5, 1e6, double(FLT_MAX)}) expect_matches_reference(kHuber, delta, y, t, 3);
}

TEST(Huber, DeltaOneIsHalfTheMseForSmallResiduals) {
    const std::vector<float> y = {0.5f, -0.25f, 0.75f, 0.0f}, t(4, 0.0f);
    EXPECT_FLOAT_EQ(loss_at(kHuber, 1.0, y, t, 2).loss, 0.5f * (0.25f + 0.0625f + 0.5625f) / 4.0f);
}

TEST(SmoothL1, ValuesAndGradientsOnBothSidesOfBetaAndAtIt) {
    const std::vector<float> y = {-3.0f, -1.0f, -0.5f, 0.0f, 0.25f, 1.0f, 2.5f, 1e-3f};
    const std::vector<float> t(y.size(), 0.0f);
    for (double beta : {1.0, 0.5, 1e-6, 1e6}) expect_matches_reference(kSmoothL1, beta, y, t, 4);
    // At |r| = beta: 0.5 beta and a gradient of +-1.
    const Result r = loss_at(kSmoothL1, 1.0, {1.0f, -1.0f}, {0.0f, 0.0f}, 2);
    EXPECT_EQ(r.loss, 0.5f);
    EXPECT_EQ(r.dy, (std::vector<float>{0.5f, -0.5f}));
}

TEST(SmoothL1, BetaZeroIsL1WithAZeroGradientAtZero) {
    const std::vector<float> y = {-3.0f, 0.0f, 2.0f, 1e-30f}, t(4, 0.0f);
    const Result r = loss_at(kSmoothL1, 0.0, y, t, 2);
    EXPECT_FLOAT_EQ(r.loss, (3.0f + 0.0f + 2.0f + 1e-30f) / 4.0f);
    EXPECT_EQ(r.dy, (std::vector<float>{-0.25f, 0.0f, 0.25f, 0.25f}));
}

TEST(SmoothL1, IsHuberOverBeta) {
    // SmoothL1(beta) = Huber(delta = beta) / beta, term by term.
    const std::vector<float> y = {-3.0f, -0.75f, 0.1f, 2.0f}, t = {0.5f, 0.0f, 0.0f, 1.0f};
    EXPECT_NEAR(loss_at(kSmoothL1, 0.5, y, t, 2).loss, loss_at(kHuber, 0.5, y, t, 2).loss / 0.5f, 1e-6);
}

TEST(LossParameter, SmoothL1BetaRangeIsZeroToFloatMax) {
    Model m = make_model("input 2; dense 2");
    Backward bwd = make_backward(m.get(), 2);
    double v = -1;
    ASSERT_EQ(snn_get_loss_parameter(bwd.get(), SNN_LOSS_SMOOTH_L1, &v), SNN_OK);
    EXPECT_EQ(v, 1.0);
    for (double bad : {-1e-30, double(NAN), double(INFINITY), 3.5e38}) {
        EXPECT_EQ(snn_set_loss_parameter(bwd.get(), SNN_LOSS_SMOOTH_L1, bad), SNN_ERR_INVALID_ARGUMENT) << bad;
        EXPECT_NE(std::string(snn_last_error()).find("beta of the smooth L1 loss must be in [0, "), std::string::npos)
            << snn_last_error();
    }
    ASSERT_EQ(snn_set_loss_parameter(bwd.get(), SNN_LOSS_SMOOTH_L1, 0.0), SNN_OK);
    ASSERT_EQ(snn_get_loss_parameter(bwd.get(), SNN_LOSS_SMOOTH_L1, &v), SNN_OK);
    EXPECT_EQ(v, 0.0);
    // Each loss keeps its own parameter.
    ASSERT_EQ(snn_get_loss_parameter(bwd.get(), SNN_LOSS_HUBER, &v), SNN_OK);
    EXPECT_EQ(v, 1.0);
}

TEST(BceWithLogits, ExtremeLogitsAndTargets) {
    // Logits +-1e4 (no overflow), +-30, tiny, zero; targets 0, 1 and 0.5.
    const std::vector<float> y = {1e4f, -1e4f, 30.0f, -30.0f, 1e-7f, 0.0f, 2.5f, -3.0f,
                                  1e4f, -1e4f, 30.0f, -30.0f, 1e-7f, 0.0f, 2.5f, -3.0f};
    const std::vector<float> t = {0.0f, 1.0f, 1.0f, 0.0f, 0.5f, 0.5f, 1.0f, 0.0f,
                                  1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.5f, 0.5f};
    expect_matches_reference(kBce, NAN, y, t, 8);
}

TEST(BceWithLogits, ConfidentRightLogitsKeepTinyLossesAndGradients) {
    // Logit 30 with target 1 (and -30 with 0): loss log1p(e^-30) = 9.36e-14,
    // gradient -+9.36e-14, which 1 - sigmoid rounded in float would lose.
    const Result r = loss_at(kBce, NAN, {30.0f, -30.0f}, {1.0f, 0.0f}, 2);
    const double tiny = std::log1p(std::exp(-30.0));
    EXPECT_NEAR(r.loss, tiny, 1e-6 * tiny);
    const double g = tiny / 2.0;  // e^-30 / (1 + e^-30) = 9.36e-14 too, over 2
    EXPECT_NEAR(r.dy[0], -g, 1e-6 * g);
    EXPECT_NEAR(r.dy[1], g, 1e-6 * g);
}

TEST(BceWithLogits, HasNoParameter) {
    Model m = make_model("input 2; dense 2");
    Backward bwd = make_backward(m.get(), 2);
    double v = 0;
    EXPECT_EQ(snn_set_loss_parameter(bwd.get(), SNN_LOSS_BCE_WITH_LOGITS, 1.0), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_get_loss_parameter(bwd.get(), SNN_LOSS_BCE_WITH_LOGITS, &v), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(snn_last_error()).find("binary cross-entropy loss (SNN_LOSS_BCE_WITH_LOGITS) has no"),
              std::string::npos)
        << snn_last_error();
}

TEST(LossParameter, HuberDeltaRangeIsRefusedOutsideZeroToFloatMax) {
    Model m = make_model("input 2; dense 2");
    Backward bwd = make_backward(m.get(), 2);
    double v = 0;
    ASSERT_EQ(snn_get_loss_parameter(bwd.get(), SNN_LOSS_HUBER, &v), SNN_OK);
    EXPECT_EQ(v, 1.0);
    for (double bad : {0.0, -1e-30, 1e-300, double(NAN), double(INFINITY), -double(INFINITY), 3.5e38}) {
        EXPECT_EQ(snn_set_loss_parameter(bwd.get(), SNN_LOSS_HUBER, bad), SNN_ERR_INVALID_ARGUMENT) << bad;
        EXPECT_NE(std::string(snn_last_error()).find("delta of the Huber loss must be in (0, "), std::string::npos)
            << snn_last_error();
    }
    ASSERT_EQ(snn_get_loss_parameter(bwd.get(), SNN_LOSS_HUBER, &v), SNN_OK);
    EXPECT_EQ(v, 1.0);  // unchanged by the refusals
    for (double good : {1e-45, 1e-6, double(FLT_MAX)}) {
        ASSERT_EQ(snn_set_loss_parameter(bwd.get(), SNN_LOSS_HUBER, good), SNN_OK) << good;
        ASSERT_EQ(snn_get_loss_parameter(bwd.get(), SNN_LOSS_HUBER, &v), SNN_OK);
        EXPECT_EQ(v, good);
    }
}

// A delta in (0, FLT_MAX] as a double that is 0 as a float32 is refused
// with that reason.
TEST(LossParameter, AHuberDeltaThatRoundsToZeroSaysSo) {
    Model m = make_model("input 2; dense 2");
    Backward bwd = make_backward(m.get(), 2);
    EXPECT_EQ(snn_set_loss_parameter(bwd.get(), SNN_LOSS_HUBER, 1e-300), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(snn_last_error()).find("got 1e-300, which is 0 as a float32"), std::string::npos)
        << snn_last_error();
    EXPECT_EQ(snn_set_loss_parameter(bwd.get(), SNN_LOSS_HUBER, -1.0), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(snn_last_error()).find("as a float32, got -1,"), std::string::npos) << snn_last_error();
}

TEST(LossParameter, TargetsAreNeededAndOfTheForwardBatch) {
    Model m = make_model("input 2; dense 2");
    Forward fwd = make_forward(m.get(), 4);
    Backward bwd = make_backward(m.get(), 4);
    run(fwd.get(), m.get(), std::vector<float>(8, 0.5f));
    float loss = 0;
    EXPECT_EQ(snn_backprop(bwd.get(), fwd.get(), m.get(), SNN_LOSS_HUBER, &loss), SNN_ERR_STATE);
    EXPECT_NE(std::string(snn_last_error()).find("no targets are set"), std::string::npos) << snn_last_error();
    const std::vector<int32_t> labels = {0, 1, 0, 1};
    ASSERT_EQ(snn_set_labels(bwd.get(), labels.data(), labels.size()), SNN_OK);
    EXPECT_EQ(snn_backprop(bwd.get(), fwd.get(), m.get(), SNN_LOSS_HUBER, &loss), SNN_ERR_STATE);
    const std::vector<float> t(6, 0.0f);
    ASSERT_EQ(snn_set_targets(bwd.get(), t.data(), t.size()), SNN_OK);
    EXPECT_EQ(snn_backprop(bwd.get(), fwd.get(), m.get(), SNN_LOSS_HUBER, &loss), SNN_ERR_STATE);
    EXPECT_NE(std::string(snn_last_error()).find("targets are set for a batch of 3 but the forward batch is 4"),
              std::string::npos)
        << snn_last_error();
}

// Central differences of the loss, recomputed in double from the outputs,
// against the gradients of the parameters and inputs of a small network.
void expect_finite_differences(const Reference &ref, double param, float target_lo, float target_hi) {
    Model m = make_model("input 5; dense 4 tanh; dense 3");
    ASSERT_EQ(snn_model_init(m.get(), 7), SNN_OK);
    const int64_t batch = 3;
    const size_t k = 3;
    Random rng(11);
    std::vector<float> x = rng.uniform_vector(size_t(batch) * 5, -1.0f, 1.0f);
    const std::vector<float> t = rng.uniform_vector(size_t(batch) * k, target_lo, target_hi);
    Forward fwd = make_forward(m.get(), batch);
    Backward bwd = make_backward(m.get(), batch);
    ASSERT_EQ(snn_set_input_gradient(bwd.get(), 1), SNN_OK);
    if (!std::isnan(param)) ASSERT_EQ(snn_set_loss_parameter(bwd.get(), ref.loss, param), SNN_OK);
    run(fwd.get(), m.get(), x);
    ASSERT_EQ(snn_set_targets(bwd.get(), t.data(), t.size()), SNN_OK);
    float loss = 0;
    ASSERT_EQ(snn_backprop(bwd.get(), fwd.get(), m.get(), ref.loss, &loss), SNN_OK) << snn_last_error();
    const std::vector<float> g = gradients(bwd.get(), m.get());
    std::vector<float> gx(x.size());
    ASSERT_EQ(snn_get_input_gradients(bwd.get(), gx.data(), gx.size()), SNN_OK);

    auto loss_of = [&]() {
        const std::vector<float> y = run(fwd.get(), m.get(), x);
        double sum = 0;
        for (size_t i = 0; i < y.size(); ++i) sum += ref.term(y[i], t[i], param);
        return sum / double(y.size());
    };
    EXPECT_NEAR(loss, loss_of(), 1e-6 * (1.0 + std::fabs(loss)));
    float *params = nullptr;
    size_t count = 0;
    ASSERT_EQ(snn_parameters(m.get(), &params, &count), SNN_OK);
    const float eps = 1e-2f;
    auto central = [&](float &v) {
        const float saved = v;
        v = saved + eps;
        const double up = loss_of();
        v = saved - eps;
        const double down = loss_of();
        v = saved;
        return (up - down) / (2.0 * double(eps));
    };
    for (size_t i = 0; i < count; ++i) expect_gradient_close("parameter", i, central(params[i]), g[i]);
    for (size_t i = 0; i < x.size(); ++i) expect_gradient_close("input", i, central(x[i]), gx[i]);
}

TEST(Huber, MatchesFiniteDifferences) {
    // delta 0.3 with residuals of about +-1: both branches.
    expect_finite_differences(kHuber, 0.3, -1.0f, 1.0f);
    expect_finite_differences(kHuber, 1.0, -2.0f, 2.0f);
}

TEST(SmoothL1, MatchesFiniteDifferences) {
    expect_finite_differences(kSmoothL1, 0.3, -1.0f, 1.0f);
    expect_finite_differences(kSmoothL1, 2.0, -1.0f, 1.0f);
}

TEST(BceWithLogits, MatchesFiniteDifferences) {
    expect_finite_differences(kBce, NAN, 0.0f, 1.0f);
    expect_finite_differences(kBce, NAN, -0.5f, 1.5f);  // targets outside [0, 1] are taken as given
}

}  // namespace

// Optimisers added through the registry: Lion, SGD's dampening and clipping
// by the global gradient norm. Defaults, ranges and refusals, update values
// computed by hand, and checkpoints that keep every setting and the state.
#include <stdlib.h>
#include <unistd.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "helpers.h"

using namespace snn_test;

namespace {

using Settings = std::vector<std::pair<snn_hyperparameter, double>>;

double hp(const snn_optimiser *o, snn_hyperparameter which) {
    double v = NAN;
    EXPECT_EQ(snn_optimiser_get(o, which, &v), SNN_OK) << snn_last_error();
    return v;
}

void set_all(snn_optimiser *o, const Settings &settings) {
    for (const auto &[which, value] : settings)
        ASSERT_EQ(snn_optimiser_set(o, which, value), SNN_OK) << which << ": " << snn_last_error();
}

bool refused_with(snn_status status, const char *text) {
    return status == SNN_ERR_INVALID_ARGUMENT && std::string(snn_last_error()).find(text) != std::string::npos;
}

// "input 2; dense 1" (weights w0, w1 and the bias) with known parameters,
// stepped from caller-given gradients.
struct Tiny {
    Model m = make_model("input 2; dense 1");
    Backward b = make_backward(m.get(), 1);
    Optimiser o;
    explicit Tiny(snn_optimiser_kind kind, const std::vector<float> &params = {0.5f, -2.0f, 0.25f}) {
        o = make_optimiser(m.get(), kind);
        EXPECT_EQ(snn_set_parameters(m.get(), params.data(), params.size()), SNN_OK);
    }
    std::vector<float> step(const std::vector<float> &g) {
        EXPECT_EQ(snn_set_gradients(b.get(), g.data(), g.size()), SNN_OK) << snn_last_error();
        EXPECT_EQ(snn_optimiser_step(o.get(), m.get(), b.get()), SNN_OK) << snn_last_error();
        return get_params(m.get());
    }
};

// A path in the test's temporary directory, removed with the object.
struct TempPath {
    std::string path;
    explicit TempPath(const char *name) : path(testing::TempDir() + name + std::to_string(getpid())) {}
    ~TempPath() { std::remove(path.c_str()); }
};

// The optimiser's state after a save and a load: every hyperparameter of
// `which`, the step count, and the next step's parameters (which depend on
// the moments) equal the original's.
void expect_checkpoint_round_trip(snn_optimiser_kind kind, const Settings &settings,
                                  const std::vector<snn_hyperparameter> &which) {
    Tiny t(kind);
    set_all(t.o.get(), settings);
    t.step({0.75f, -1.5f, 2.0f});
    t.step({-0.25f, 3.0f, 0.5f});
    TempPath file("ckpt");
    ASSERT_EQ(snn_checkpoint_save(t.m.get(), t.o.get(), file.path.c_str()), SNN_OK) << snn_last_error();
    snn_model *raw_m = nullptr;
    snn_optimiser *raw_o = nullptr;
    ASSERT_EQ(snn_checkpoint_load(file.path.c_str(), &raw_m, &raw_o), SNN_OK) << snn_last_error();
    Model m(raw_m);
    Optimiser o(raw_o);
    for (snn_hyperparameter h : which) EXPECT_EQ(hp(o.get(), h), hp(t.o.get(), h)) << h;
    int64_t a = -1, b = -2;
    EXPECT_EQ(snn_optimiser_step_count(o.get(), &a), SNN_OK);
    EXPECT_EQ(snn_optimiser_step_count(t.o.get(), &b), SNN_OK);
    EXPECT_EQ(a, b);
    Backward grads = make_backward(m.get(), 1);
    const std::vector<float> g = {0.125f, 0.5f, -1.0f};
    ASSERT_EQ(snn_set_gradients(grads.get(), g.data(), g.size()), SNN_OK);
    ASSERT_EQ(snn_optimiser_step(o.get(), m.get(), grads.get()), SNN_OK) << snn_last_error();
    const std::vector<float> resumed = get_params(m.get()), original = t.step(g);
    for (size_t i = 0; i < original.size(); ++i) EXPECT_EQ(resumed[i], original[i]) << i;
}

// ---- Lion ---------------------------------------------------------------------------

TEST(Lion, HasTheDefaultsOfLionPytorchAndOnlyItsHyperparameters) {
    Model m = make_model("input 2; dense 1");
    Optimiser lion = make_optimiser(m.get(), SNN_OPTIMISER_LION);
    EXPECT_EQ(hp(lion.get(), SNN_HP_LEARNING_RATE), 1e-4);
    EXPECT_EQ(hp(lion.get(), SNN_HP_BETA1), 0.9);
    EXPECT_EQ(hp(lion.get(), SNN_HP_BETA2), 0.99);
    EXPECT_EQ(hp(lion.get(), SNN_HP_WEIGHT_DECAY), 0.0);
    for (snn_hyperparameter h : {SNN_HP_MOMENTUM, SNN_HP_NESTEROV, SNN_HP_EPSILON, SNN_HP_ALPHA}) {
        EXPECT_TRUE(refused_with(snn_optimiser_set(lion.get(), h, 0.5), "does not apply to Lion")) << h;
        double v = 0;
        EXPECT_EQ(snn_optimiser_get(lion.get(), h, &v), SNN_ERR_INVALID_ARGUMENT) << h;
    }
}

TEST(Lion, RangesAreThoseOfTheOtherOptimisers) {
    Model m = make_model("input 2; dense 1");
    Optimiser lion = make_optimiser(m.get(), SNN_OPTIMISER_LION);
    for (snn_hyperparameter beta : {SNN_HP_BETA1, SNN_HP_BETA2}) {
        for (double bad : {1.0, -0.1, 1.5, double(NAN), double(INFINITY)})
            EXPECT_EQ(snn_optimiser_set(lion.get(), beta, bad), SNN_ERR_INVALID_ARGUMENT) << bad;
        EXPECT_EQ(snn_optimiser_set(lion.get(), beta, 0.0), SNN_OK);
        EXPECT_EQ(snn_optimiser_set(lion.get(), beta, 0.99999999), SNN_OK);  // rounds to 1.0f
    }
    EXPECT_TRUE(refused_with(snn_optimiser_set(lion.get(), SNN_HP_LEARNING_RATE, -1e-3), "learning rate must be in"));
    EXPECT_TRUE(refused_with(snn_optimiser_set(lion.get(), SNN_HP_WEIGHT_DECAY, 1e39), "weight decay must be in"));
    EXPECT_EQ(snn_optimiser_set(lion.get(), SNN_HP_WEIGHT_DECAY, 1e36), SNN_OK);  // x 1e-4
    EXPECT_TRUE(refused_with(snn_optimiser_set(lion.get(), SNN_HP_LEARNING_RATE, 1000.0),
                             "is above the largest float32"));
    EXPECT_EQ(hp(lion.get(), SNN_HP_LEARNING_RATE), 1e-4);
}

// Two steps by hand: p = p (1 - lr wd) - lr sign(b1 m + (1 - b1) g), then
// m = b2 m + (1 - b2) g; a zero gradient with zero momentum moves a
// parameter by its decay alone (sign(0) = 0).
TEST(Lion, StepsAreTheSignOfTheInterpolatedMomentum) {
    Tiny t(SNN_OPTIMISER_LION);
    set_all(t.o.get(), {{SNN_HP_LEARNING_RATE, 0.1}, {SNN_HP_WEIGHT_DECAY, 0.5}});
    const std::vector<float> p1 = t.step({2.0f, -3.0f, 0.0f});
    EXPECT_FLOAT_EQ(p1[0], 0.5f * 0.95f - 0.1f);
    EXPECT_FLOAT_EQ(p1[1], -2.0f * 0.95f + 0.1f);
    EXPECT_FLOAT_EQ(p1[2], 0.25f * 0.95f);
    // m = 0.01 g1 = (0.02, -0.03, 0), so c = m + 0.1 (g2 - m) is
    // (-0.082, -0.012, 0.1): the second weight moves against its gradient.
    const std::vector<float> p2 = t.step({-1.0f, 0.15f, 1.0f});
    EXPECT_FLOAT_EQ(p2[0], p1[0] * 0.95f + 0.1f);
    EXPECT_FLOAT_EQ(p2[1], p1[1] * 0.95f + 0.1f);
    EXPECT_FLOAT_EQ(p2[2], p1[2] * 0.95f - 0.1f);
}

TEST(Lion, ACheckpointKeepsEverySettingAndTheMomentum) {
    expect_checkpoint_round_trip(SNN_OPTIMISER_LION,
                                 {{SNN_HP_LEARNING_RATE, 0.0123456789}, {SNN_HP_BETA1, 0.87654321},
                                  {SNN_HP_BETA2, 0.99999999}, {SNN_HP_WEIGHT_DECAY, 0.3}},
                                 {SNN_HP_LEARNING_RATE, SNN_HP_BETA1, SNN_HP_BETA2, SNN_HP_WEIGHT_DECAY});
}

// ---- SGD's dampening ---------------------------------------------------------------

TEST(Dampening, IsAnSgdSettingInZeroToOne) {
    Model m = make_model("input 2; dense 1");
    Optimiser sgd = make_optimiser(m.get(), SNN_OPTIMISER_SGD);
    EXPECT_EQ(hp(sgd.get(), SNN_HP_DAMPENING), 0.0);
    for (double bad : {-0.1, 1.0000001, double(NAN), double(INFINITY)})
        EXPECT_TRUE(refused_with(snn_optimiser_set(sgd.get(), SNN_HP_DAMPENING, bad), "dampening must")) << bad;
    EXPECT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_DAMPENING, 1.0), SNN_OK);
    EXPECT_EQ(hp(sgd.get(), SNN_HP_DAMPENING), 1.0);
    for (snn_optimiser_kind kind : {SNN_OPTIMISER_ADAM, SNN_OPTIMISER_ADAMW, SNN_OPTIMISER_RMSPROP, SNN_OPTIMISER_LION}) {
        Optimiser o = make_optimiser(m.get(), kind);
        EXPECT_TRUE(refused_with(snn_optimiser_set(o.get(), SNN_HP_DAMPENING, 0.5), "dampening does not apply")) << kind;
    }
}

// PyTorch refuses Nesterov with dampening; so does snn, in either order.
TEST(Dampening, NesterovNeedsDampeningZeroWhicheverIsSetLast) {
    Model m = make_model("input 2; dense 1");
    Optimiser sgd = make_optimiser(m.get(), SNN_OPTIMISER_SGD);
    ASSERT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_MOMENTUM, 0.9), SNN_OK);
    ASSERT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_DAMPENING, 0.5), SNN_OK);
    EXPECT_TRUE(refused_with(snn_optimiser_set(sgd.get(), SNN_HP_NESTEROV, 1.0),
                             "Nesterov momentum needs dampening 0, but it is 0.5"));
    EXPECT_EQ(hp(sgd.get(), SNN_HP_NESTEROV), 0.0);
    ASSERT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_DAMPENING, 0.0), SNN_OK);
    ASSERT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_NESTEROV, 1.0), SNN_OK);
    EXPECT_TRUE(refused_with(snn_optimiser_set(sgd.get(), SNN_HP_DAMPENING, 0.25),
                             "Nesterov momentum needs dampening 0, got 0.25 (turn Nesterov off first)"));
    EXPECT_EQ(hp(sgd.get(), SNN_HP_DAMPENING), 0.0);
    EXPECT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_DAMPENING, 0.0), SNN_OK);  // 0 is always allowed
}

// b = g on the first step, then b = 0.9 b + 0.5 g; p -= lr b.
TEST(Dampening, ScalesTheNewGradientFromTheSecondStep) {
    Tiny t(SNN_OPTIMISER_SGD);
    set_all(t.o.get(), {{SNN_HP_LEARNING_RATE, 1.0}, {SNN_HP_MOMENTUM, 0.9}, {SNN_HP_DAMPENING, 0.5}});
    const std::vector<float> p1 = t.step({1.0f, -2.0f, 0.5f});
    EXPECT_EQ(p1[0], 0.5f - 1.0f);
    EXPECT_EQ(p1[1], -2.0f + 2.0f);
    EXPECT_EQ(p1[2], 0.25f - 0.5f);
    const std::vector<float> p2 = t.step({4.0f, 2.0f, -1.0f});
    EXPECT_FLOAT_EQ(p2[0], p1[0] - (0.9f * 1.0f + 0.5f * 4.0f));
    EXPECT_FLOAT_EQ(p2[1], p1[1] - (0.9f * -2.0f + 0.5f * 2.0f));
    EXPECT_FLOAT_EQ(p2[2], p1[2] - (0.9f * 0.5f + 0.5f * -1.0f));
}

TEST(Dampening, ACheckpointKeepsItAndTheMomentumBuffer) {
    expect_checkpoint_round_trip(SNN_OPTIMISER_SGD,
                                 {{SNN_HP_LEARNING_RATE, 0.03}, {SNN_HP_MOMENTUM, 0.7}, {SNN_HP_DAMPENING, 0.3},
                                  {SNN_HP_WEIGHT_DECAY, 0.001}},
                                 {SNN_HP_LEARNING_RATE, SNN_HP_MOMENTUM, SNN_HP_DAMPENING, SNN_HP_NESTEROV,
                                  SNN_HP_WEIGHT_DECAY});
}

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const std::string &path, const std::string &bytes) {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
}

// Removes "<key>":"<value>" from a safetensors file's JSON header, padding
// with spaces so that the header keeps its length: the file a version of
// snn without that key wrote.
void remove_metadata_key(const std::string &path, const std::string &key) {
    std::string bytes = read_file(path);
    uint64_t length = 0;
    std::memcpy(&length, bytes.data(), 8);
    const size_t at = bytes.find("\"" + key + "\":");
    ASSERT_TRUE(at != std::string::npos && at < 8 + length) << key;
    size_t end = bytes.find('"', bytes.find('"', at + key.size() + 3) + 1) + 1;  // after the value
    if (bytes[end] == ',') ++end;
    else if (bytes[at - 1] == ',') bytes[at - 1] = ' ';
    for (size_t i = at; i < end; ++i) bytes[i] = ' ';
    write_file(path, bytes);
}

// A checkpoint written before SNN_HP_DAMPENING existed has no
// "optimiser.dampening": it loads with dampening 0, as PyTorch's default.
TEST(Dampening, ACheckpointWithoutTheKeyLoadsWithTheDefault) {
    Tiny t(SNN_OPTIMISER_SGD);
    set_all(t.o.get(), {{SNN_HP_MOMENTUM, 0.9}, {SNN_HP_DAMPENING, 0.5}});
    t.step({1.0f, 2.0f, 3.0f});
    TempPath file("old_sgd");
    ASSERT_EQ(snn_checkpoint_save(t.m.get(), t.o.get(), file.path.c_str()), SNN_OK);
    ASSERT_NE(read_file(file.path).find("\"optimiser.dampening\":\"0.5\""), std::string::npos);
    remove_metadata_key(file.path, "optimiser.dampening");
    ASSERT_EQ(read_file(file.path).find("dampening"), std::string::npos);
    snn_model *raw_m = nullptr;
    snn_optimiser *raw_o = nullptr;
    ASSERT_EQ(snn_checkpoint_load(file.path.c_str(), &raw_m, &raw_o), SNN_OK) << snn_last_error();
    Model m(raw_m);
    Optimiser o(raw_o);
    EXPECT_EQ(hp(o.get(), SNN_HP_DAMPENING), 0.0);
    EXPECT_EQ(hp(o.get(), SNN_HP_MOMENTUM), 0.9);
}

// ---- clipping by the global gradient norm ------------------------------------------

TEST(Clipping, EveryKindHasItOffByDefaultWithAFloat32Range) {
    Model m = make_model("input 2; dense 1");
    for (snn_optimiser_kind kind : {SNN_OPTIMISER_SGD, SNN_OPTIMISER_ADAM, SNN_OPTIMISER_ADAMW, SNN_OPTIMISER_RMSPROP,
                                    SNN_OPTIMISER_LION}) {
        Optimiser o = make_optimiser(m.get(), kind);
        EXPECT_EQ(hp(o.get(), SNN_HP_MAX_GRAD_NORM), 0.0) << kind;
        for (double bad : {-1e-3, 1e39, double(NAN), double(INFINITY)})
            EXPECT_TRUE(refused_with(snn_optimiser_set(o.get(), SNN_HP_MAX_GRAD_NORM, bad), "max grad norm must"))
                << kind << " " << bad;
        EXPECT_EQ(snn_optimiser_set(o.get(), SNN_HP_MAX_GRAD_NORM, FLT_MAX), SNN_OK);
        EXPECT_EQ(snn_optimiser_set(o.get(), SNN_HP_MAX_GRAD_NORM, 0.0), SNN_OK);
    }
}

double grad_norm(const snn_optimiser *o) {
    double norm = -1.0;
    EXPECT_EQ(snn_optimiser_grad_norm(o, &norm), SNN_OK) << snn_last_error();
    return norm;
}

// g = (3, 4, 0) has norm 5: with max_norm 1 the step uses g / (5 + 1e-6),
// with max_norm 10 g itself; the cache's gradient is left unscaled.
TEST(Clipping, ScalesTheStepsGradientByMaxNormOverItsNorm) {
    Tiny t(SNN_OPTIMISER_SGD);
    set_all(t.o.get(), {{SNN_HP_LEARNING_RATE, 1.0}, {SNN_HP_MAX_GRAD_NORM, 1.0}});
    const float coef = float(1.0 / (5.0 + 1e-6));
    const std::vector<float> p1 = t.step({3.0f, 4.0f, 0.0f});
    EXPECT_EQ(grad_norm(t.o.get()), 5.0);
    EXPECT_FLOAT_EQ(p1[0], 0.5f - 3.0f * coef);
    EXPECT_FLOAT_EQ(p1[1], -2.0f - 4.0f * coef);
    EXPECT_EQ(p1[2], 0.25f);
    std::vector<float> g(3);
    ASSERT_EQ(snn_get_gradients(t.b.get(), g.data(), g.size()), SNN_OK);
    EXPECT_EQ(g, (std::vector<float>{3.0f, 4.0f, 0.0f}));
    ASSERT_EQ(snn_optimiser_set(t.o.get(), SNN_HP_MAX_GRAD_NORM, 10.0), SNN_OK);
    const std::vector<float> p2 = t.step({3.0f, 4.0f, 0.0f});
    EXPECT_EQ(grad_norm(t.o.get()), 5.0);
    EXPECT_EQ(p2[0], p1[0] - 3.0f);
    EXPECT_EQ(p2[1], p1[1] - 4.0f);
}

TEST(Clipping, TheGradientNormNeedsAStepThatClipped) {
    Tiny t(SNN_OPTIMISER_ADAM);
    double norm = 7.0;
    EXPECT_EQ(snn_optimiser_grad_norm(t.o.get(), &norm), SNN_ERR_STATE);
    EXPECT_NE(std::string(snn_last_error()).find("no step yet"), std::string::npos) << snn_last_error();
    t.step({1.0f, 1.0f, 1.0f});
    EXPECT_EQ(snn_optimiser_grad_norm(t.o.get(), &norm), SNN_ERR_STATE);
    EXPECT_NE(std::string(snn_last_error()).find("did not clip"), std::string::npos) << snn_last_error();
    EXPECT_EQ(norm, 7.0);
    set_all(t.o.get(), {{SNN_HP_MAX_GRAD_NORM, 1.0}});
    t.step({1.0f, 1.0f, 1.0f});
    EXPECT_DOUBLE_EQ(grad_norm(t.o.get()), std::sqrt(3.0));
    EXPECT_EQ(snn_optimiser_grad_norm(nullptr, &norm), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(snn_optimiser_grad_norm(t.o.get(), nullptr), SNN_ERR_NULL_ARGUMENT);
    ASSERT_EQ(snn_optimiser_reset(t.o.get()), SNN_OK);
    EXPECT_EQ(snn_optimiser_grad_norm(t.o.get(), &norm), SNN_ERR_STATE);
}

// The norm of a real gradient of 140 000 parameters (several threads'
// slices) against a direct sum in long double, and the same bits with one
// thread and with two.
TEST(Clipping, TheNormIsTheL2NormOfTheWholeGradientForAnyThreadCount) {
    Model m = make_model("input 64; dense 512 relu; dense 200 tanh; dense 10");
    Forward f = make_forward(m.get(), 8);
    Backward b = make_backward(m.get(), 8);
    Random rng(3);
    const std::vector<float> x = rng.uniform_vector(8 * 64, -2.0f, 2.0f), y = rng.uniform_vector(80, -1.0f, 1.0f);
    ASSERT_EQ(snn_set_inputs(f.get(), x.data(), x.size()), SNN_OK);
    ASSERT_EQ(snn_forward(f.get(), m.get()), SNN_OK);
    ASSERT_EQ(snn_set_targets(b.get(), y.data(), y.size()), SNN_OK);
    ASSERT_EQ(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_MSE, nullptr), SNN_OK);
    const std::vector<float> g = gradients(b.get(), m.get());
    long double sum = 0;
    for (float v : g) sum += (long double)v * v;
    const double expected = double(std::sqrt(sum));
    double norms[2] = {0, 0};
    const int32_t saved = snn_get_num_threads();
    for (int threads = 1; threads <= 2; ++threads) {
        ASSERT_EQ(snn_set_num_threads(threads), SNN_OK);
        Optimiser o = make_optimiser(m.get(), SNN_OPTIMISER_SGD);
        set_all(o.get(), {{SNN_HP_LEARNING_RATE, 0.0}, {SNN_HP_MAX_GRAD_NORM, 1e-3}});
        ASSERT_EQ(snn_optimiser_step(o.get(), m.get(), b.get()), SNN_OK);
        norms[threads - 1] = grad_norm(o.get());
    }
    EXPECT_NEAR(norms[0], expected, 1e-13 * expected);
    EXPECT_EQ(std::memcmp(&norms[0], &norms[1], sizeof(double)), 0) << norms[0] << " " << norms[1];
    ASSERT_EQ(snn_set_num_threads(saved), SNN_OK);
}

// As PyTorch with error_if_nonfinite=False: an infinite norm scales the
// gradient by 0 (inf * 0 is NaN), a NaN norm makes every update NaN.
TEST(Clipping, ANonFiniteNormBehavesAsPyTorchs) {
    ASSERT_EQ(snn_set_check_finite(0), SNN_OK);
    Tiny inf(SNN_OPTIMISER_SGD);
    set_all(inf.o.get(), {{SNN_HP_LEARNING_RATE, 1.0}, {SNN_HP_MAX_GRAD_NORM, 1.0}});
    const std::vector<float> p = inf.step({INFINITY, 2.0f, -1.0f});
    EXPECT_TRUE(std::isinf(grad_norm(inf.o.get())));
    EXPECT_TRUE(std::isnan(p[0]));
    EXPECT_EQ(p[1], -2.0f);
    EXPECT_EQ(p[2], 0.25f);
    Tiny nan(SNN_OPTIMISER_ADAM);
    set_all(nan.o.get(), {{SNN_HP_MAX_GRAD_NORM, 1.0}});
    for (float v : nan.step({NAN, 2.0f, -1.0f})) EXPECT_TRUE(std::isnan(v));
    EXPECT_TRUE(std::isnan(grad_norm(nan.o.get())));
}

TEST(Clipping, ACheckpointKeepsTheLimit) {
    expect_checkpoint_round_trip(SNN_OPTIMISER_LION,
                                 {{SNN_HP_LEARNING_RATE, 0.01}, {SNN_HP_WEIGHT_DECAY, 0.1}, {SNN_HP_MAX_GRAD_NORM, 0.75}},
                                 {SNN_HP_LEARNING_RATE, SNN_HP_BETA1, SNN_HP_BETA2, SNN_HP_WEIGHT_DECAY,
                                  SNN_HP_MAX_GRAD_NORM});
    expect_checkpoint_round_trip(SNN_OPTIMISER_ADAM, {{SNN_HP_MAX_GRAD_NORM, 1.25}, {SNN_HP_BETA2, 0.9999}},
                                 {SNN_HP_LEARNING_RATE, SNN_HP_BETA1, SNN_HP_BETA2, SNN_HP_EPSILON,
                                  SNN_HP_WEIGHT_DECAY, SNN_HP_MAX_GRAD_NORM});
}

// A checkpoint written before SNN_HP_MAX_GRAD_NORM existed loads unclipped.
TEST(Clipping, ACheckpointWithoutTheKeyLoadsWithClippingOff) {
    Tiny t(SNN_OPTIMISER_ADAMW);
    set_all(t.o.get(), {{SNN_HP_MAX_GRAD_NORM, 2.0}});
    t.step({1.0f, 2.0f, 3.0f});
    TempPath file("old_adamw");
    ASSERT_EQ(snn_checkpoint_save(t.m.get(), t.o.get(), file.path.c_str()), SNN_OK);
    remove_metadata_key(file.path, "optimiser.max_grad_norm");
    ASSERT_EQ(read_file(file.path).find("max_grad_norm"), std::string::npos);
    snn_model *raw_m = nullptr;
    snn_optimiser *raw_o = nullptr;
    ASSERT_EQ(snn_checkpoint_load(file.path.c_str(), &raw_m, &raw_o), SNN_OK) << snn_last_error();
    Model m(raw_m);
    Optimiser o(raw_o);
    EXPECT_EQ(hp(o.get(), SNN_HP_MAX_GRAD_NORM), 0.0);
    EXPECT_EQ(hp(o.get(), SNN_HP_WEIGHT_DECAY), 0.01);
}

}  // namespace

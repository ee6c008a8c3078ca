// Caches, gathers, loss values, optimiser settings and state, determinism
// and concurrent forward passes.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <thread>

#include "helpers.h"

using namespace snn_test;

namespace {

const char *const kCnn =
    "input 8x8x2; conv 3x3 4 relu pad=1; maxpool 2; conv 3x3 4 tanh; flatten; dense 3";

bool bit_identical(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// ---- caches and gathers --------------------------------------------------------

// A cache preallocated for 8 and truncated to 3 computes what a cache of 3 does.
TEST(Cache, TruncatedBatchEqualsASmallerCache) {
    Model m = make_model(kCnn);
    Random rng(1);
    const std::vector<float> x = rng.uniform_vector(3 * 128, -1.0f, 1.0f);
    const std::vector<int32_t> labels = {2, 0, 1};
    Forward big = make_forward(m.get(), 8), small = make_forward(m.get(), 3);
    ASSERT_EQ(snn_cache_set_batch(big.get(), 3), SNN_OK);
    int64_t batch = 0, max_batch = 0;
    ASSERT_EQ(snn_cache_batch(big.get(), &batch, &max_batch), SNN_OK);
    EXPECT_EQ(batch, 3);
    EXPECT_EQ(max_batch, 8);
    const std::vector<float> y_big = run(big.get(), m.get(), x);
    const std::vector<float> y_small = run(small.get(), m.get(), x);
    ASSERT_EQ(y_big.size(), 9u);
    for (size_t i = 0; i < y_big.size(); ++i) EXPECT_FLOAT_EQ(y_big[i], y_small[i]) << i;

    Backward b_big = make_backward(m.get(), 8), b_small = make_backward(m.get(), 3);
    ASSERT_EQ(snn_set_labels(b_big.get(), labels.data(), 3), SNN_OK);
    ASSERT_EQ(snn_set_labels(b_small.get(), labels.data(), 3), SNN_OK);
    float l_big = 0, l_small = 0;
    ASSERT_EQ(snn_backprop(b_big.get(), big.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &l_big), SNN_OK);
    ASSERT_EQ(snn_backprop(b_small.get(), small.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &l_small), SNN_OK);
    EXPECT_FLOAT_EQ(l_big, l_small);
    const std::vector<float> g_big = gradients(b_big.get(), m.get()), g_small = gradients(b_small.get(), m.get());
    for (size_t i = 0; i < g_big.size(); ++i) EXPECT_NEAR(g_big[i], g_small[i], 1e-6f) << i;
}

TEST(Cache, BatchOutsideItsRangeIsRefused) {
    Model m = make_model("input 2; dense 1");
    Forward f = make_forward(m.get(), 4);
    EXPECT_EQ(snn_cache_set_batch(f.get(), 0), SNN_ERR_BATCH);
    EXPECT_EQ(snn_cache_set_batch(f.get(), 5), SNN_ERR_BATCH);
    const float x[3] = {1, 2, 3};
    EXPECT_EQ(snn_set_inputs(f.get(), x, 3), SNN_ERR_COUNT);  // batch 4 needs 8 floats
}

TEST(Gather, InputsAndLabelsEqualManualCopies) {
    Model m = make_model("input 5; dense 6 tanh; dense 4");
    Random rng(3);
    const size_t samples = 10;
    const std::vector<float> data = rng.uniform_vector(samples * 5, -1.0f, 1.0f);
    std::vector<int32_t> all_labels(samples);
    for (size_t i = 0; i < samples; ++i) all_labels[i] = int32_t((i * 3) % 4);
    const std::vector<int64_t> idx = {7, 2, 2, 9};

    std::vector<float> x;
    std::vector<int32_t> labels;
    for (int64_t i : idx) {
        x.insert(x.end(), data.begin() + i * 5, data.begin() + (i + 1) * 5);
        labels.push_back(all_labels[size_t(i)]);
    }

    Forward gathered = make_forward(m.get(), 8), copied = make_forward(m.get(), 4);
    ASSERT_EQ(snn_set_inputs_gather(gathered.get(), data.data(), samples, idx.data(), idx.size()), SNN_OK);
    int64_t batch = 0, max_batch = 0;
    ASSERT_EQ(snn_cache_batch(gathered.get(), &batch, &max_batch), SNN_OK);
    EXPECT_EQ(batch, 4);
    ASSERT_EQ(snn_forward(gathered.get(), m.get()), SNN_OK);
    std::vector<float> y_gathered(16);
    ASSERT_EQ(snn_get_outputs(gathered.get(), y_gathered.data(), 16), SNN_OK);
    EXPECT_TRUE(bit_identical(y_gathered, run(copied.get(), m.get(), x)));

    Backward bg = make_backward(m.get(), 8), bc = make_backward(m.get(), 4);
    ASSERT_EQ(snn_set_labels_gather(bg.get(), all_labels.data(), samples, idx.data(), idx.size()), SNN_OK);
    ASSERT_EQ(snn_set_labels(bc.get(), labels.data(), labels.size()), SNN_OK);
    float lg = 0, lc = 0;
    ASSERT_EQ(snn_backprop(bg.get(), gathered.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &lg), SNN_OK);
    ASSERT_EQ(snn_backprop(bc.get(), copied.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &lc), SNN_OK);
    EXPECT_EQ(lg, lc);
    EXPECT_TRUE(bit_identical(gradients(bg.get(), m.get()), gradients(bc.get(), m.get())));
}

TEST(Gather, IndicesOutOfRangeAreRefused) {
    Model m = make_model("input 2; dense 3");
    Forward f = make_forward(m.get(), 4);
    Backward b = make_backward(m.get(), 4);
    const float data[6] = {0, 1, 2, 3, 4, 5};
    const int32_t labels[3] = {0, 1, 2};
    const int64_t bad[2] = {0, 3}, negative[1] = {-1};
    EXPECT_EQ(snn_set_inputs_gather(f.get(), data, 3, bad, 2), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_set_inputs_gather(f.get(), data, 3, negative, 1), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_set_labels_gather(b.get(), labels, 3, bad, 2), SNN_ERR_INVALID_ARGUMENT);
    const int64_t five[5] = {0, 1, 2, 0, 1};
    EXPECT_EQ(snn_set_inputs_gather(f.get(), data, 3, five, 5), SNN_ERR_BATCH);
}

// ---- loss values ------------------------------------------------------------------

// A dense layer with W = I and b = 0 outputs its inputs, so the loss can be
// checked against hand-computed values.
Model identity_model(int n) {
    Model m = make_model("input " + std::to_string(n) + "; dense " + std::to_string(n));
    std::vector<float> p(size_t(n * n + n), 0.0f);
    for (int i = 0; i < n; ++i) p[size_t(i * n + i)] = 1.0f;
    EXPECT_EQ(snn_set_parameters(m.get(), p.data(), p.size()), SNN_OK);
    return m;
}

TEST(Loss, MseIsTheMeanOverAllElements) {
    Model m = identity_model(3);
    Forward f = make_forward(m.get(), 2);
    Backward b = make_backward(m.get(), 2);
    ASSERT_EQ(snn_set_input_gradient(b.get(), 1), SNN_OK);
    run(f.get(), m.get(), {1, 2, 3, 4, 5, 6});
    const float t[6] = {0, 2, 5, 4, 4, 6};  // differences 1, 0, -2, 0, 1, 0
    ASSERT_EQ(snn_set_targets(b.get(), t, 6), SNN_OK);
    float loss = 0;
    ASSERT_EQ(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_MSE, &loss), SNN_OK);
    EXPECT_FLOAT_EQ(loss, 1.0f);  // (1 + 4 + 1) / 6
    std::vector<float> dx(6);
    ASSERT_EQ(snn_get_input_gradients(b.get(), dx.data(), 6), SNN_OK);
    const float expected[6] = {1.0f / 3, 0, -2.0f / 3, 0, 1.0f / 3, 0};  // 2 (y - t) / 6
    for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(dx[i], expected[i]) << i;
}

TEST(Loss, CrossEntropyOfEqualLogitsIsLogOfClassCount) {
    Model m = identity_model(3);
    Forward f = make_forward(m.get(), 1);
    Backward b = make_backward(m.get(), 1);
    run(f.get(), m.get(), {0.5f, 0.5f, 0.5f});
    const int32_t label = 2;
    ASSERT_EQ(snn_set_labels(b.get(), &label, 1), SNN_OK);
    float loss = 0;
    ASSERT_EQ(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &loss), SNN_OK);
    EXPECT_FLOAT_EQ(loss, std::log(3.0f));
}

// Logits of +-1e4 would overflow a naive softmax. Here softmax is exactly
// one-hot on the largest logit: the loss is 1e4 for a label on logit 0
// and 0 for a label on the largest, and the gradients are finite and exact.
TEST(Loss, CrossEntropyIsStableForHugeLogits) {
    Model m = identity_model(3);
    Forward f = make_forward(m.get(), 2);
    Backward b = make_backward(m.get(), 2);
    ASSERT_EQ(snn_set_input_gradient(b.get(), 1), SNN_OK);
    run(f.get(), m.get(), {1e4f, 0.0f, -1e4f, 1e4f, 0.0f, -1e4f});
    const int32_t labels[2] = {1, 0};
    ASSERT_EQ(snn_set_labels(b.get(), labels, 2), SNN_OK);
    float loss = 0;
    ASSERT_EQ(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &loss), SNN_OK);
    EXPECT_FLOAT_EQ(loss, 5000.0f);  // (1e4 + 0) / 2
    std::vector<float> dx(6);
    ASSERT_EQ(snn_get_input_gradients(b.get(), dx.data(), 6), SNN_OK);
    // (softmax - onehot) / batch with softmax = (1, 0, 0)
    const float expected[6] = {0.5f, -0.5f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(dx[i], expected[i]) << i;
    for (float g : gradients(b.get(), m.get())) EXPECT_TRUE(std::isfinite(g));
    // dW[0][0] = sum over the batch of dz[0] * x[0] = 0.5 * 1e4
    EXPECT_FLOAT_EQ(gradients(b.get(), m.get())[0], 5000.0f);
}

TEST(Loss, LabelsOutsideTheOutputsAreRefused) {
    Model m = identity_model(3);
    Backward b = make_backward(m.get(), 2);
    const int32_t labels[2] = {0, 3};
    EXPECT_EQ(snn_set_labels(b.get(), labels, 2), SNN_ERR_LABEL);
    EXPECT_NE(std::string(snn_last_error()).find("label 3"), std::string::npos) << snn_last_error();
}

// ---- optimisers ------------------------------------------------------------------

double hp(const snn_optimiser *o, snn_hyperparameter which) {
    double v = -1;
    EXPECT_EQ(snn_optimiser_get(o, which, &v), SNN_OK) << which;
    return v;
}

TEST(Optimiser, DefaultsArePyTorchs) {
    Model m = make_model("input 2; dense 1");
    Optimiser sgd = make_optimiser(m.get(), SNN_OPTIMISER_SGD);
    EXPECT_EQ(hp(sgd.get(), SNN_HP_LEARNING_RATE), 0.01);
    EXPECT_EQ(hp(sgd.get(), SNN_HP_MOMENTUM), 0.0);
    EXPECT_EQ(hp(sgd.get(), SNN_HP_NESTEROV), 0.0);
    EXPECT_EQ(hp(sgd.get(), SNN_HP_WEIGHT_DECAY), 0.0);
    Optimiser adam = make_optimiser(m.get(), SNN_OPTIMISER_ADAM);
    EXPECT_EQ(hp(adam.get(), SNN_HP_LEARNING_RATE), 0.001);
    EXPECT_EQ(hp(adam.get(), SNN_HP_BETA1), 0.9);
    EXPECT_EQ(hp(adam.get(), SNN_HP_BETA2), 0.999);
    EXPECT_EQ(hp(adam.get(), SNN_HP_EPSILON), 1e-8);
    EXPECT_EQ(hp(adam.get(), SNN_HP_WEIGHT_DECAY), 0.0);
    Optimiser adamw = make_optimiser(m.get(), SNN_OPTIMISER_ADAMW);
    EXPECT_EQ(hp(adamw.get(), SNN_HP_LEARNING_RATE), 0.001);
    EXPECT_EQ(hp(adamw.get(), SNN_HP_WEIGHT_DECAY), 0.01);
    EXPECT_EQ(hp(adamw.get(), SNN_HP_BETA2), 0.999);
    Optimiser rms = make_optimiser(m.get(), SNN_OPTIMISER_RMSPROP);
    EXPECT_EQ(hp(rms.get(), SNN_HP_LEARNING_RATE), 0.01);
    EXPECT_EQ(hp(rms.get(), SNN_HP_ALPHA), 0.99);
    EXPECT_EQ(hp(rms.get(), SNN_HP_EPSILON), 1e-8);
    EXPECT_EQ(hp(rms.get(), SNN_HP_WEIGHT_DECAY), 0.0);
}

TEST(Optimiser, OutOfRangeOrForeignHyperparametersAreRefused) {
    Model m = make_model("input 2; dense 1");
    Optimiser sgd = make_optimiser(m.get(), SNN_OPTIMISER_SGD);
    Optimiser adam = make_optimiser(m.get(), SNN_OPTIMISER_ADAM);
    Optimiser rms = make_optimiser(m.get(), SNN_OPTIMISER_RMSPROP);
    EXPECT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_LEARNING_RATE, -0.1), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_LEARNING_RATE, NAN), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_LEARNING_RATE, INFINITY), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_MOMENTUM, 1.0), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_NESTEROV, 1.0), SNN_ERR_INVALID_ARGUMENT);  // no momentum
    EXPECT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_BETA1, 0.9), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_EPSILON, 1e-8), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_optimiser_set(adam.get(), SNN_HP_BETA2, 1.0), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_optimiser_set(adam.get(), SNN_HP_EPSILON, 0.0), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_optimiser_set(adam.get(), SNN_HP_ALPHA, 0.9), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_optimiser_set(adam.get(), SNN_HP_MOMENTUM, 0.9), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_optimiser_set(rms.get(), SNN_HP_ALPHA, -0.5), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_optimiser_set(rms.get(), SNN_HP_WEIGHT_DECAY, -1.0), SNN_ERR_INVALID_ARGUMENT);
    double v = 0;
    EXPECT_EQ(snn_optimiser_get(sgd.get(), SNN_HP_BETA1, &v), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_optimiser_get(adam.get(), 99, &v), SNN_ERR_INVALID_ARGUMENT);
    // Failed calls leave the values untouched.
    EXPECT_EQ(hp(sgd.get(), SNN_HP_LEARNING_RATE), 0.01);
    EXPECT_EQ(hp(adam.get(), SNN_HP_BETA2), 0.999);

    EXPECT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_MOMENTUM, 0.9), SNN_OK);
    EXPECT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_NESTEROV, 1.0), SNN_OK);
    EXPECT_EQ(hp(sgd.get(), SNN_HP_NESTEROV), 1.0);

    snn_optimiser *o = nullptr;
    EXPECT_EQ(snn_optimiser_create(m.get(), 0, &o), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_optimiser_create(m.get(), 6, &o), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(o, nullptr);
}

// The updates run in float32: a value finite as a double but not as a float
// (1e300, 3.5e38), or an epsilon a float32 update reads as 0 (1e-320, or a
// subnormal, which the updates flush), made the next step's parameters
// infinite or NaN. Such values are refused; the limits themselves are not.
TEST(Optimiser, ValuesOutsideFloat32AreRefused) {
    Model m = make_model("input 2; dense 1");
    Optimiser sgd = make_optimiser(m.get(), SNN_OPTIMISER_SGD);
    Optimiser adam = make_optimiser(m.get(), SNN_OPTIMISER_ADAM);
    Optimiser adamw = make_optimiser(m.get(), SNN_OPTIMISER_ADAMW);
    Optimiser rms = make_optimiser(m.get(), SNN_OPTIMISER_RMSPROP);
    for (snn_optimiser *o : {sgd.get(), adam.get(), adamw.get(), rms.get()}) {
        for (double v : {1e300, 3.5e38, -1e300}) {
            EXPECT_EQ(snn_optimiser_set(o, SNN_HP_LEARNING_RATE, v), SNN_ERR_INVALID_ARGUMENT) << v;
            EXPECT_NE(std::string(snn_last_error()).find("learning rate must be in [0, 3.40282347e+38] (finite in float32"),
                      std::string::npos) << snn_last_error();
            EXPECT_EQ(snn_optimiser_set(o, SNN_HP_WEIGHT_DECAY, v), SNN_ERR_INVALID_ARGUMENT) << v;
            EXPECT_NE(std::string(snn_last_error()).find("weight decay must be in [0, 3.40282347e+38]"),
                      std::string::npos) << snn_last_error();
        }
    }
    for (snn_optimiser *o : {adam.get(), adamw.get(), rms.get()}) {
        for (double v : {1e-320, 1e-39, 1e-46, 3.5e38}) {
            EXPECT_EQ(snn_optimiser_set(o, SNN_HP_EPSILON, v), SNN_ERR_INVALID_ARGUMENT) << v;
            EXPECT_NE(std::string(snn_last_error()).find("epsilon must be in [1.17549435e-38, 3.40282347e+38] (a normal float32"),
                      std::string::npos) << snn_last_error();
        }
    }
    // Failed calls leave the values untouched.
    EXPECT_EQ(hp(adam.get(), SNN_HP_LEARNING_RATE), 0.001);
    EXPECT_EQ(hp(adam.get(), SNN_HP_WEIGHT_DECAY), 0.0);
    EXPECT_EQ(hp(rms.get(), SNN_HP_EPSILON), 1e-8);

    EXPECT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_LEARNING_RATE, FLT_MAX), SNN_OK);
    EXPECT_EQ(snn_optimiser_set(adam.get(), SNN_HP_EPSILON, FLT_MIN), SNN_OK);
    EXPECT_EQ(snn_optimiser_set(rms.get(), SNN_HP_EPSILON, FLT_MAX), SNN_OK);
    EXPECT_EQ(snn_optimiser_set(sgd.get(), SNN_HP_WEIGHT_DECAY, 2.0), SNN_ERR_INVALID_ARGUMENT);  // x FLT_MAX

    // AdamW decays by lr x weight decay in one float32 factor: the product
    // is bounded too, whichever of the two is set last.
    EXPECT_EQ(snn_optimiser_set(adamw.get(), SNN_HP_WEIGHT_DECAY, 1e20), SNN_OK);  // x 0.001
    EXPECT_EQ(snn_optimiser_set(adamw.get(), SNN_HP_LEARNING_RATE, 1e20), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(snn_last_error()).find("learning rate 1e+20 times weight decay 1e+20 is above the largest float32"),
              std::string::npos) << snn_last_error();
    EXPECT_EQ(snn_optimiser_set(adamw.get(), SNN_HP_LEARNING_RATE, 1e18), SNN_OK);
    EXPECT_EQ(snn_optimiser_set(adamw.get(), SNN_HP_WEIGHT_DECAY, 1e21), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(hp(adamw.get(), SNN_HP_WEIGHT_DECAY), 1e20);
}

// One step from a caller's gradient g on "input 2; dense 1": the parameter
// changes.
std::vector<float> step_changes(snn_optimiser_kind kind, const std::vector<std::pair<snn_hyperparameter, double>> &hps,
                                float g) {
    Model m = make_model("input 2; dense 1");
    Backward b = make_backward(m.get(), 1);
    Optimiser o = make_optimiser(m.get(), kind);
    for (const auto &[which, value] : hps) EXPECT_EQ(snn_optimiser_set(o.get(), which, value), SNN_OK) << snn_last_error();
    const std::vector<float> start = get_params(m.get());
    const std::vector<float> grad(start.size(), g);
    EXPECT_EQ(snn_set_gradients(b.get(), grad.data(), grad.size()), SNN_OK);
    EXPECT_EQ(snn_optimiser_step(o.get(), m.get(), b.get()), SNN_OK) << snn_last_error();
    const std::vector<float> end = get_params(m.get());
    std::vector<float> change(start.size());
    for (size_t i = 0; i < change.size(); ++i) change[i] = end[i] - start[i];
    return change;
}

// At the edges of their ranges the settings still give finite steps: the
// smallest epsilon with a zero gradient (0 / (0 + eps)), and betas or alpha
// so close to 1 that they round to 1.0f (their complement is computed in
// double: Adam's first step is then -lr sign(g), as in PyTorch).
TEST(Optimiser, SettingsAtTheEdgesOfTheirRangesGiveFiniteSteps) {
    for (snn_optimiser_kind kind : {SNN_OPTIMISER_ADAM, SNN_OPTIMISER_ADAMW, SNN_OPTIMISER_RMSPROP})
        for (float change : step_changes(kind, {{SNN_HP_EPSILON, FLT_MIN}, {SNN_HP_WEIGHT_DECAY, 0.0}}, 0.0f))
            EXPECT_EQ(change, 0.0f) << kind;
    for (float change : step_changes(SNN_OPTIMISER_ADAM, {{SNN_HP_BETA1, 0.99999999}, {SNN_HP_BETA2, 0.99999999}}, 1.0f))
        EXPECT_NEAR(change, -0.001f, 1e-6f);
    for (float change : step_changes(SNN_OPTIMISER_RMSPROP, {{SNN_HP_ALPHA, 0.99999999}}, 1e-3f)) {
        EXPECT_TRUE(std::isfinite(change));
        EXPECT_LT(change, 0.0f);
    }
}

// One training step on a fixed batch: forward, cross-entropy backprop, step.
struct Trainer {
    Model model;
    Forward fwd;
    Backward bwd;
    std::vector<float> x;
    std::vector<int32_t> labels;

    explicit Trainer(const char *spec, int64_t batch, uint64_t seed)
        : model(make_model(spec)), fwd(make_forward(model.get(), batch)),
          bwd(make_backward(model.get(), batch)) {
        EXPECT_EQ(snn_model_init(model.get(), seed), SNN_OK);
        Random rng(seed);
        x = rng.uniform_vector(size_t(batch) * input_size(model.get()), -1.0f, 1.0f);
        for (int64_t i = 0; i < batch; ++i) labels.push_back(int32_t(i % int64_t(output_size(model.get()))));
        EXPECT_EQ(snn_set_labels(bwd.get(), labels.data(), labels.size()), SNN_OK);
    }
    float step(snn_optimiser *o) {
        run(fwd.get(), model.get(), x);
        float loss = 0;
        EXPECT_EQ(snn_backprop(bwd.get(), fwd.get(), model.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &loss), SNN_OK);
        EXPECT_EQ(snn_optimiser_step(o, model.get(), bwd.get()), SNN_OK) << snn_last_error();
        return loss;
    }
};

TEST(Optimiser, StepWithoutBackpropIsAStateError) {
    Model m = make_model("input 2; dense 1");
    Backward b = make_backward(m.get(), 1);
    Optimiser o = make_optimiser(m.get(), SNN_OPTIMISER_ADAM);
    EXPECT_EQ(snn_optimiser_step(o.get(), m.get(), b.get()), SNN_ERR_STATE);
}

// An SGD step from a gradient set by the caller moves each parameter by
// -lr * gradient, and the gradient reads back as written.
TEST(Optimiser, StepsFromAGradientSetByTheCaller) {
    Model m = make_model("input 2; dense 2");
    Backward b = make_backward(m.get(), 1);
    Optimiser o = make_optimiser(m.get(), SNN_OPTIMISER_SGD);
    ASSERT_EQ(snn_optimiser_set(o.get(), SNN_HP_LEARNING_RATE, 0.5), SNN_OK);
    const std::vector<float> start = get_params(m.get());
    const std::vector<float> g = {1, -2, 0.5f, 4, -1, 0};
    ASSERT_EQ(snn_set_gradients(b.get(), g.data(), g.size()), SNN_OK);
    std::vector<float> back(g.size());
    ASSERT_EQ(snn_get_gradients(b.get(), back.data(), back.size()), SNN_OK);
    EXPECT_TRUE(bit_identical(back, g));
    ASSERT_EQ(snn_optimiser_step(o.get(), m.get(), b.get()), SNN_OK);
    const std::vector<float> after = get_params(m.get());
    for (size_t i = 0; i < g.size(); ++i) EXPECT_FLOAT_EQ(after[i], start[i] - 0.5f * g[i]);
}

TEST(Optimiser, CountsStepsAndResetRestartsFromScratch) {
    Trainer t("input 4; dense 5 tanh; dense 3", 4, 21);
    const std::vector<float> start = get_params(t.model.get());
    Optimiser o = make_optimiser(t.model.get(), SNN_OPTIMISER_ADAM);
    int64_t steps = -1;
    ASSERT_EQ(snn_optimiser_step_count(o.get(), &steps), SNN_OK);
    EXPECT_EQ(steps, 0);
    for (int i = 0; i < 3; ++i) t.step(o.get());
    ASSERT_EQ(snn_optimiser_step_count(o.get(), &steps), SNN_OK);
    EXPECT_EQ(steps, 3);

    // After a reset, two steps from the start equal two steps of a new optimiser.
    ASSERT_EQ(snn_optimiser_reset(o.get()), SNN_OK);
    ASSERT_EQ(snn_optimiser_step_count(o.get(), &steps), SNN_OK);
    EXPECT_EQ(steps, 0);
    ASSERT_EQ(snn_set_parameters(t.model.get(), start.data(), start.size()), SNN_OK);
    t.step(o.get());
    t.step(o.get());
    const std::vector<float> after_reset = get_params(t.model.get());

    Optimiser fresh = make_optimiser(t.model.get(), SNN_OPTIMISER_ADAM);
    ASSERT_EQ(snn_set_parameters(t.model.get(), start.data(), start.size()), SNN_OK);
    t.step(fresh.get());
    t.step(fresh.get());
    EXPECT_TRUE(bit_identical(get_params(t.model.get()), after_reset));
}

TEST(Optimiser, EveryKindLowersTheLossOnAFixedBatch) {
    const snn_optimiser_kind kinds[] = {SNN_OPTIMISER_SGD, SNN_OPTIMISER_ADAM, SNN_OPTIMISER_ADAMW,
                                        SNN_OPTIMISER_RMSPROP};
    for (snn_optimiser_kind kind : kinds) {
        Trainer t("input 4; dense 8 tanh; dense 3", 6, 5);
        Optimiser o = make_optimiser(t.model.get(), kind);
        ASSERT_EQ(snn_optimiser_set(o.get(), SNN_HP_LEARNING_RATE, 0.05), SNN_OK);
        const float first = t.step(o.get());
        float last = first;
        for (int i = 0; i < 30; ++i) last = t.step(o.get());
        EXPECT_LT(last, 0.8f * first) << "kind " << kind;
    }
}

// ---- determinism and threads -----------------------------------------------------

TEST(Determinism, IdenticalTrainingRunsGiveBitIdenticalParameters) {
    std::vector<float> result[2];
    for (auto &r : result) {
        Trainer t(kCnn, 5, 77);
        Optimiser o = make_optimiser(t.model.get(), SNN_OPTIMISER_ADAM);
        for (int i = 0; i < 10; ++i) t.step(o.get());
        r = get_params(t.model.get());
    }
    EXPECT_TRUE(bit_identical(result[0], result[1]));
}

// Several forward caches run one model at once (snn_forward only reads the
// parameters): every thread gets what a single thread computes.
TEST(Threads, ConcurrentForwardCachesMatchASingleThread) {
    Model m = make_model(kCnn);
    const int kThreads = 4, kRounds = 20;
    const int64_t batch = 6;
    std::vector<std::vector<float>> inputs, expected;
    for (int t = 0; t < kThreads; ++t) {
        Random rng(100 + uint64_t(t));
        inputs.push_back(rng.uniform_vector(size_t(batch) * input_size(m.get()), -1.0f, 1.0f));
        Forward f = make_forward(m.get(), batch);
        expected.push_back(run(f.get(), m.get(), inputs.back()));
    }
    std::vector<int> mismatches(kThreads, 0), failures(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            snn_forward_cache *c = nullptr;
            if (snn_preallocate(m.get(), batch, &c) != SNN_OK) {
                failures[t] = 1;
                return;
            }
            std::vector<float> y(expected[t].size());
            for (int r = 0; r < kRounds; ++r) {
                if (snn_set_inputs(c, inputs[t].data(), inputs[t].size()) != SNN_OK ||
                    snn_forward(c, m.get()) != SNN_OK ||
                    snn_get_outputs(c, y.data(), y.size()) != SNN_OK)
                    ++failures[t];
                else if (std::memcmp(y.data(), expected[t].data(), y.size() * sizeof(float)) != 0)
                    ++mismatches[t];
            }
            snn_forward_cache_destroy(c);
        });
    for (auto &th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
        EXPECT_EQ(failures[t], 0) << "thread " << t;
        EXPECT_EQ(mismatches[t], 0) << "thread " << t;
    }
}

}  // namespace

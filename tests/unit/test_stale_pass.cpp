// Backprop differentiates the forward pass as it ran. A call that changes
// what that pass read (its inputs, the parameters, the running statistics of
// an inference-mode pass) between snn_forward and snn_backprop makes backprop
// fail with SNN_ERR_STATE naming the call, as PyTorch raises when a tensor
// saved for backward is modified in place; a new forward pass makes it valid
// again. Calls that change only what the next pass does (mode, batch, seed)
// leave the last pass differentiable.
#include "helpers.h"

#include <functional>

namespace {

using namespace snn_test;

const std::vector<float> kX1 = {0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f};
const std::vector<float> kX2 = {-2.0f, 1.0f, 0.5f, 0.0f, 3.0f, 1.25f};
const int32_t kLabels[2] = {1, 0};

std::string last_error() { return snn_last_error(); }

// Gradients of the cross-entropy of a fresh forward pass on x.
std::vector<float> fresh_gradients(snn_model *m, const std::vector<float> &x) {
    Forward f = make_forward(m, 2);
    Backward b = make_backward(m, 2);
    run(f.get(), m, x);
    EXPECT_EQ(snn_set_labels(b.get(), kLabels, 2), SNN_OK);
    EXPECT_EQ(snn_backprop(b.get(), f.get(), m, SNN_LOSS_LOGIT_CROSSENTROPY, nullptr), SNN_OK) << last_error();
    return gradients(b.get(), m);
}

struct Pass {
    Forward f;
    Backward b;
};

// A forward pass on x with labels set, ready for backprop.
Pass forward_on(snn_model *m, const std::vector<float> &x) {
    Pass p{make_forward(m, 2), make_backward(m, 2)};
    run(p.f.get(), m, x);
    EXPECT_EQ(snn_set_labels(p.b.get(), kLabels, 2), SNN_OK);
    return p;
}

snn_status backprop(Pass &p, snn_model *m) {
    return snn_backprop(p.b.get(), p.f.get(), m, SNN_LOSS_LOGIT_CROSSENTROPY, nullptr);
}

TEST(StalePass, InputsSetBeforeTheForwardPassAreTheOnesDifferentiated) {
    Model m = make_model("input 3; dense 4 tanh; dense 2");
    Pass p = forward_on(m.get(), kX1);
    ASSERT_EQ(snn_set_inputs(p.f.get(), kX2.data(), kX2.size()), SNN_OK);
    ASSERT_EQ(snn_forward(p.f.get(), m.get()), SNN_OK);
    ASSERT_EQ(backprop(p, m.get()), SNN_OK) << last_error();
    EXPECT_EQ(gradients(p.b.get(), m.get()), fresh_gradients(m.get(), kX2));
    EXPECT_NE(fresh_gradients(m.get(), kX1), fresh_gradients(m.get(), kX2));
}

TEST(StalePass, InputsSetAfterTheForwardPassAreRefusedUntilTheNextPass) {
    Model m = make_model("input 3; dense 4 tanh; dense 2");
    const int64_t idx[2] = {1, 0};
    snn_dataset *d = nullptr;
    ASSERT_EQ(snn_dataset_create(SNN_DEVICE_CPU, kX2.data(), 2, 3, nullptr, &d), SNN_OK);
    snn_handles::Dataset data(d);
    struct Setter {
        const char *name;
        std::function<snn_status(snn_forward_cache *)> call;
    };
    const Setter setters[] = {
        {"snn_set_inputs", [](snn_forward_cache *f) { return snn_set_inputs(f, kX2.data(), kX2.size()); }},
        {"snn_set_inputs_gather",
         [&](snn_forward_cache *f) { return snn_set_inputs_gather(f, kX2.data(), 2, idx, 2); }},
        {"snn_set_inputs_from_dataset",
         [&](snn_forward_cache *f) { return snn_set_inputs_from_dataset(f, data.get(), idx, 2); }},
    };
    for (const Setter &s : setters) {
        SCOPED_TRACE(s.name);
        Pass p = forward_on(m.get(), kX1);
        ASSERT_EQ(s.call(p.f.get()), SNN_OK) << last_error();
        EXPECT_EQ(backprop(p, m.get()), SNN_ERR_STATE);
        EXPECT_EQ(last_error(), std::string("snn_backprop: ") + s.name +
                                    " replaced the inputs after the forward pass (call snn_forward again)");
        std::vector<float> grad(param_count(m.get()));
        EXPECT_EQ(snn_backprop_with_output_gradient(p.b.get(), p.f.get(), m.get(), grad.data(), 4), SNN_ERR_STATE);
        ASSERT_EQ(snn_forward(p.f.get(), m.get()), SNN_OK);
        ASSERT_EQ(backprop(p, m.get()), SNN_OK) << last_error();
    }
}

// A setter that fails leaves the inputs, and the pass, as they were.
TEST(StalePass, AFailedSetterKeepsThePassValid) {
    Model m = make_model("input 3; dense 4 tanh; dense 2");
    Pass p = forward_on(m.get(), kX1);
    EXPECT_EQ(snn_set_inputs(p.f.get(), kX2.data(), 5), SNN_ERR_COUNT);
    ASSERT_EQ(backprop(p, m.get()), SNN_OK) << last_error();
    EXPECT_EQ(gradients(p.b.get(), m.get()), fresh_gradients(m.get(), kX1));
}

TEST(StalePass, ParametersChangedAfterTheForwardPassAreRefused) {
    Model m = make_model("input 3; dense 4 tanh; dense 2");
    const std::vector<float> params = get_params(m.get());
    struct Writer {
        const char *name;
        std::function<snn_status(Pass &)> call;
    };
    Optimiser opt = make_optimiser(m.get(), SNN_OPTIMISER_SGD);
    const Writer writers[] = {
        {"snn_set_parameters",
         [&](Pass &) { return snn_set_parameters(m.get(), params.data(), params.size()); }},
        {"snn_model_init", [&](Pass &) { return snn_model_init(m.get(), 3); }},
        {"snn_optimiser_step",
         [&](Pass &p) {
             EXPECT_EQ(backprop(p, m.get()), SNN_OK) << last_error();
             return snn_optimiser_step(opt.get(), m.get(), p.b.get());
         }},
    };
    for (const Writer &w : writers) {
        SCOPED_TRACE(w.name);
        Pass p = forward_on(m.get(), kX1);
        ASSERT_EQ(w.call(p), SNN_OK) << last_error();
        EXPECT_EQ(backprop(p, m.get()), SNN_ERR_STATE);
        EXPECT_EQ(last_error(), std::string("snn_backprop: ") + w.name +
                                    " changed the parameters after the forward pass (call snn_forward again)");
        ASSERT_EQ(snn_forward(p.f.get(), m.get()), SNN_OK);
        ASSERT_EQ(backprop(p, m.get()), SNN_OK) << last_error();
        EXPECT_EQ(gradients(p.b.get(), m.get()), fresh_gradients(m.get(), kX1));
    }
}

// An inference-mode pass reads the running statistics; a training-mode pass
// normalises with its batch's and is not affected by later writes.
TEST(StalePass, RunningStatisticsChangedAfterAnInferencePassAreRefused) {
    Model m = make_model("input 3; dense 4; batchnorm; tanh; dense 2");
    const std::vector<float> state = get_state(m.get());
    Pass inference{make_forward(m.get(), 2), make_backward(m.get(), 2)};
    ASSERT_EQ(snn_cache_set_training(inference.f.get(), 0), SNN_OK);
    run(inference.f.get(), m.get(), kX1);
    ASSERT_EQ(snn_set_labels(inference.b.get(), kLabels, 2), SNN_OK);
    Pass training = forward_on(m.get(), kX1);  // updates the running statistics
    EXPECT_EQ(backprop(inference, m.get()), SNN_ERR_STATE);
    EXPECT_EQ(last_error(), "snn_backprop: snn_forward (training mode) of another cache changed the running "
                            "statistics after the inference-mode forward pass (call snn_forward again)");
    ASSERT_EQ(snn_forward(inference.f.get(), m.get()), SNN_OK);
    ASSERT_EQ(backprop(inference, m.get()), SNN_OK) << last_error();

    ASSERT_EQ(snn_set_state(m.get(), state.data(), state.size()), SNN_OK);
    EXPECT_EQ(backprop(inference, m.get()), SNN_ERR_STATE);
    EXPECT_NE(last_error().find("snn_set_state changed the running statistics"), std::string::npos) << last_error();
    EXPECT_EQ(backprop(training, m.get()), SNN_OK) << last_error();
}

// Mode, batch and dropout seed apply to the next pass: the last one is
// differentiated as it ran (its mode, its batch, its masks).
TEST(StalePass, ModeBatchAndSeedChangesKeepTheLastPass) {
    Model m = make_model("input 3; dense 8 relu; dropout 0.5; dense 2");
    Pass reference = forward_on(m.get(), kX1);
    ASSERT_EQ(backprop(reference, m.get()), SNN_OK) << last_error();
    const std::vector<float> expected = gradients(reference.b.get(), m.get());

    Pass p = forward_on(m.get(), kX1);
    ASSERT_EQ(snn_cache_set_training(p.f.get(), 0), SNN_OK);
    ASSERT_EQ(snn_cache_set_batch(p.f.get(), 1), SNN_OK);
    ASSERT_EQ(snn_cache_set_seed(p.f.get(), 77), SNN_OK);
    ASSERT_EQ(snn_cache_set_rng_state(p.f.get(), 5, 9), SNN_OK);
    ASSERT_EQ(backprop(p, m.get()), SNN_OK) << last_error();
    EXPECT_EQ(gradients(p.b.get(), m.get()), expected);
}

}  // namespace

// The precision API (snn_cache_set_precision, snn_precision_support) and
// dynamic loss scaling on the CPU: a forced overflow skips the step and
// lowers the scale, good steps raise it, scaled gradients equal unscaled
// ones, and checkpoints keep the scaler.
#include <float.h>
#include <stdio.h>
#include <unistd.h>

#include "helpers.h"

namespace {

using namespace snn_test;

const char *kMlp = "input 6; dense 8 tanh; dense 3";

std::vector<float> inputs(size_t n, uint64_t seed) {
    Random r(seed);
    std::vector<float> x(n);
    for (float &v : x) v = r.uniform(-1.0f, 1.0f);
    return x;
}

TEST(Precision, CacheStartsAtFloat32AndRefusesUnknownValues) {
    Model model = make_model(kMlp);
    Forward f = make_forward(model.get(), 4);
    snn_precision p = -1;
    ASSERT_EQ(snn_cache_precision(f.get(), &p), SNN_OK);
    EXPECT_EQ(p, SNN_PRECISION_FLOAT32);
    EXPECT_EQ(snn_cache_set_precision(f.get(), 3), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(snn_last_error()).find("SNN_PRECISION_BF16"), std::string::npos);
    EXPECT_EQ(snn_cache_set_precision(nullptr, SNN_PRECISION_BF16), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(snn_cache_precision(f.get(), nullptr), SNN_ERR_NULL_ARGUMENT);
}

TEST(Precision, TheCpuRefusesFp16AndRunsBf16) {
    Model model = make_model(kMlp);
    Forward f = make_forward(model.get(), 4);
    EXPECT_EQ(snn_cache_set_precision(f.get(), SNN_PRECISION_FP16), SNN_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(snn_last_error()).find("fp16"), std::string::npos);
    snn_precision p = -1;
    ASSERT_EQ(snn_cache_precision(f.get(), &p), SNN_OK);
    EXPECT_EQ(p, SNN_PRECISION_FLOAT32);  // unchanged on failure
    int32_t native = -1;
    EXPECT_EQ(snn_precision_support(SNN_DEVICE_CPU, SNN_PRECISION_FP16, &native), SNN_ERR_UNSUPPORTED);
    EXPECT_EQ(native, -1);
    ASSERT_EQ(snn_precision_support(SNN_DEVICE_CPU, SNN_PRECISION_BF16, &native), SNN_OK);
    EXPECT_TRUE(native == 0 || native == 1);
    ASSERT_EQ(snn_precision_support(SNN_DEVICE_CPU, SNN_PRECISION_FLOAT32, &native), SNN_OK);
    EXPECT_EQ(native, 1);
    EXPECT_EQ(snn_precision_support(SNN_DEVICE_CPU, 7, &native), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_precision_support(-5, SNN_PRECISION_BF16, &native), SNN_ERR_GPU_INDEX);
}

// Ops without matrix products compute float32 at every precision: bf16
// changes nothing, bit for bit, forward and backward.
TEST(Precision, OpsWithoutProductsAreBitIdenticalAtBf16) {
    Model model = make_model("input 4x4x2; batchnorm; relu; maxpool 2; flatten; softmax");
    const std::vector<float> x = inputs(3 * 32, 5);
    std::vector<float> y[2], g[2];
    for (int k = 0; k < 2; ++k) {
        Forward f = make_forward(model.get(), 3);
        Backward b = make_backward(model.get(), 3);
        ASSERT_EQ(snn_cache_set_precision(f.get(), k ? SNN_PRECISION_BF16 : SNN_PRECISION_FLOAT32), SNN_OK)
            << snn_last_error();
        y[k] = run(f.get(), model.get(), x);
        const std::vector<float> t(y[k].size(), 0.1f);
        ASSERT_EQ(snn_set_targets(b.get(), t.data(), t.size()), SNN_OK);
        ASSERT_EQ(snn_backprop(b.get(), f.get(), model.get(), SNN_LOSS_MSE, nullptr), SNN_OK) << snn_last_error();
        g[k] = gradients(b.get(), model.get());
    }
    EXPECT_EQ(y[0], y[1]);
    EXPECT_EQ(g[0], g[1]);
}

// One MSE step's gradient of kMlp at batch 4 through (f, b).
std::vector<float> mse_gradient(snn_forward_cache *f, snn_backward_cache *b, const snn_model *m, float target,
                                snn_status *status) {
    const std::vector<float> x = inputs(4 * 6, 11);
    run(f, m, x);
    const std::vector<float> t(4 * 3, target);
    EXPECT_EQ(snn_set_targets(b, t.data(), t.size()), SNN_OK);
    *status = snn_backprop(b, f, m, SNN_LOSS_MSE, nullptr);
    return gradients(b, m);
}

// A power-of-two scale multiplies and divides exactly: the gradients equal
// the unscaled ones bit for bit.
TEST(LossScaling, ScaledGradientsEqualUnscaledOnes) {
    Model model = make_model(kMlp);
    Forward f = make_forward(model.get(), 4);
    Backward plain = make_backward(model.get(), 4), scaled = make_backward(model.get(), 4);
    ASSERT_EQ(snn_set_loss_scaling(scaled.get(), 1), SNN_OK);
    snn_status s1 = SNN_OK, s2 = SNN_OK;
    const std::vector<float> g = mse_gradient(f.get(), plain.get(), model.get(), 0.5f, &s1);
    const std::vector<float> h = mse_gradient(f.get(), scaled.get(), model.get(), 0.5f, &s2);
    ASSERT_EQ(s1, SNN_OK);
    ASSERT_EQ(s2, SNN_OK);
    EXPECT_EQ(g, h);
    int32_t on = 0, skipped = 1;
    double scale = 0;
    int64_t good = -1;
    ASSERT_EQ(snn_loss_scaling_state(scaled.get(), &on, &scale, nullptr, nullptr, nullptr, &good, &skipped), SNN_OK);
    EXPECT_EQ(on, 1);
    EXPECT_EQ(scale, 65536.0);
    EXPECT_EQ(good, 1);
    EXPECT_EQ(skipped, 0);
}

// A scale that overflows the gradient: backprop succeeds, the step is
// skipped (parameters and step count unchanged), the scale is multiplied by
// the backoff; the next good step runs.
TEST(LossScaling, ForcedOverflowSkipsTheStepAndLowersTheScale) {
    Model model = make_model(kMlp);
    Forward f = make_forward(model.get(), 4);
    Backward b = make_backward(model.get(), 4);
    Optimiser opt = make_optimiser(model.get(), SNN_OPTIMISER_ADAM);
    ASSERT_EQ(snn_set_loss_scaling_state(b.get(), 1e38, 2.0, 0.25, 3, 2), SNN_OK);
    const std::vector<float> before = get_params(model.get());
    snn_status status = SNN_ERR_INTERNAL;
    mse_gradient(f.get(), b.get(), model.get(), 1e3f, &status);
    EXPECT_EQ(status, SNN_OK) << snn_last_error();
    int32_t skipped = 0;
    double scale = 0;
    int64_t good = -1;
    ASSERT_EQ(snn_loss_scaling_state(b.get(), nullptr, &scale, nullptr, nullptr, nullptr, &good, &skipped), SNN_OK);
    EXPECT_EQ(skipped, 1);
    EXPECT_EQ(scale, 0.25e38);
    EXPECT_EQ(good, 0);
    ASSERT_EQ(snn_optimiser_step(opt.get(), model.get(), b.get()), SNN_OK) << snn_last_error();
    EXPECT_EQ(get_params(model.get()), before);
    int64_t steps = -1;
    ASSERT_EQ(snn_optimiser_step_count(opt.get(), &steps), SNN_OK);
    EXPECT_EQ(steps, 0);

    ASSERT_EQ(snn_set_loss_scaling_state(b.get(), 1024.0, 2.0, 0.5, 3, 2), SNN_OK);
    mse_gradient(f.get(), b.get(), model.get(), 0.5f, &status);
    ASSERT_EQ(status, SNN_OK);
    ASSERT_EQ(snn_loss_scaling_state(b.get(), nullptr, &scale, nullptr, nullptr, nullptr, &good, &skipped), SNN_OK);
    EXPECT_EQ(skipped, 0);
    EXPECT_EQ(scale, 2048.0);  // the third good step in a row: grown
    EXPECT_EQ(good, 0);
    ASSERT_EQ(snn_optimiser_step(opt.get(), model.get(), b.get()), SNN_OK);
    EXPECT_NE(get_params(model.get()), before);
    ASSERT_EQ(snn_optimiser_step_count(opt.get(), &steps), SNN_OK);
    EXPECT_EQ(steps, 1);
}

// Gradients set after backprop decide the step: a non-finite sum (an
// overflow on another rank) redoes the scaler's update as an overflow and
// skips; a finite one after a local overflow steps, with the scale the
// backprop started from counting a good step.
TEST(LossScaling, SetGradientsDecideTheStep) {
    Model model = make_model(kMlp);
    Forward f = make_forward(model.get(), 4);
    Backward b = make_backward(model.get(), 4);
    Optimiser opt = make_optimiser(model.get(), SNN_OPTIMISER_SGD);
    ASSERT_EQ(snn_set_loss_scaling_state(b.get(), 64.0, 2.0, 0.5, 100, 3), SNN_OK);
    snn_status status = SNN_ERR_INTERNAL;
    std::vector<float> g = mse_gradient(f.get(), b.get(), model.get(), 0.5f, &status);
    ASSERT_EQ(status, SNN_OK);
    const std::vector<float> before = get_params(model.get());
    g[1] = INFINITY;
    ASSERT_EQ(snn_set_gradients(b.get(), g.data(), g.size()), SNN_OK);
    int32_t skipped = 0;
    double scale = 0;
    int64_t good = -1;
    ASSERT_EQ(snn_loss_scaling_state(b.get(), nullptr, &scale, nullptr, nullptr, nullptr, &good, &skipped), SNN_OK);
    EXPECT_EQ(skipped, 1);
    EXPECT_EQ(scale, 32.0);
    EXPECT_EQ(good, 0);
    ASSERT_EQ(snn_optimiser_step(opt.get(), model.get(), b.get()), SNN_OK);
    EXPECT_EQ(get_params(model.get()), before);
    g[1] = 0.25f;
    ASSERT_EQ(snn_set_gradients(b.get(), g.data(), g.size()), SNN_OK);
    ASSERT_EQ(snn_loss_scaling_state(b.get(), nullptr, &scale, nullptr, nullptr, nullptr, &good, &skipped), SNN_OK);
    EXPECT_EQ(skipped, 0);
    EXPECT_EQ(scale, 64.0);
    EXPECT_EQ(good, 4);
    ASSERT_EQ(snn_optimiser_step(opt.get(), model.get(), b.get()), SNN_OK);
    EXPECT_NE(get_params(model.get()), before);
}

// A gradient changed in place to a non-finite value after a clean backprop
// is refused by the step, parameters unchanged.
TEST(LossScaling, TheStepRefusesAGradientPoisonedInPlace) {
    Model model = make_model(kMlp);
    Forward f = make_forward(model.get(), 4);
    Backward b = make_backward(model.get(), 4);
    Optimiser opt = make_optimiser(model.get(), SNN_OPTIMISER_SGD);
    ASSERT_EQ(snn_set_loss_scaling(b.get(), 1), SNN_OK);
    snn_status status = SNN_ERR_INTERNAL;
    mse_gradient(f.get(), b.get(), model.get(), 0.5f, &status);
    ASSERT_EQ(status, SNN_OK);
    const float *grads = nullptr;
    size_t count = 0;
    ASSERT_EQ(snn_gradients(b.get(), &grads, &count), SNN_OK);
    const_cast<float *>(grads)[0] = NAN;  // as an in-place reduction would
    const std::vector<float> before = get_params(model.get());
    EXPECT_EQ(snn_optimiser_step(opt.get(), model.get(), b.get()), SNN_ERR_NOT_FINITE);
    EXPECT_EQ(get_params(model.get()), before);
}

// A caller-supplied output gradient is scaled and unscaled the same way.
TEST(LossScaling, OutputGradientsAreScaledToo) {
    Model model = make_model(kMlp);
    Forward f = make_forward(model.get(), 4);
    Backward plain = make_backward(model.get(), 4), scaled = make_backward(model.get(), 4);
    ASSERT_EQ(snn_set_loss_scaling_state(scaled.get(), 1024.0, 2.0, 0.5, 10, 0), SNN_OK);
    run(f.get(), model.get(), inputs(24, 3));
    const std::vector<float> dy = inputs(12, 4);
    ASSERT_EQ(snn_backprop_with_output_gradient(plain.get(), f.get(), model.get(), dy.data(), dy.size()), SNN_OK);
    ASSERT_EQ(snn_backprop_with_output_gradient(scaled.get(), f.get(), model.get(), dy.data(), dy.size()), SNN_OK);
    EXPECT_EQ(gradients(plain.get(), model.get()), gradients(scaled.get(), model.get()));
}

// Without loss scaling a non-finite gradient is an error, as before (with
// snn_set_check_finite on).
TEST(LossScaling, OffAnOverflowIsStillAnError) {
    ASSERT_EQ(snn_set_check_finite(1), SNN_OK);
    Model model = make_model(kMlp);
    Forward f = make_forward(model.get(), 4);
    Backward b = make_backward(model.get(), 4);
    ASSERT_EQ(snn_set_loss_scaling_state(b.get(), 8.0, 2.0, 0.5, 10, 0), SNN_OK);
    ASSERT_EQ(snn_set_loss_scaling(b.get(), 0), SNN_OK);
    int32_t on = 1;
    double scale = 0;
    ASSERT_EQ(snn_loss_scaling_state(b.get(), &on, &scale, nullptr, nullptr, nullptr, nullptr, nullptr), SNN_OK);
    EXPECT_EQ(on, 0);
    EXPECT_EQ(scale, 1.0);
    snn_status status = SNN_OK;
    mse_gradient(f.get(), b.get(), model.get(), 3e38f, &status);
    EXPECT_EQ(status, SNN_ERR_NOT_FINITE);
    ASSERT_EQ(snn_set_check_finite(0), SNN_OK);
}

TEST(LossScaling, SettingsOutOfRangeAreRefused) {
    Model model = make_model(kMlp);
    Backward b = make_backward(model.get(), 4);
    EXPECT_EQ(snn_set_loss_scaling_state(b.get(), 0.0, 2.0, 0.5, 10, 0), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_set_loss_scaling_state(b.get(), 1e39, 2.0, 0.5, 10, 0), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_set_loss_scaling_state(b.get(), 8.0, 1.0, 0.5, 10, 0), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_set_loss_scaling_state(b.get(), 8.0, 2.0, 1.0, 10, 0), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_set_loss_scaling_state(b.get(), 8.0, 2.0, 0.5, 0, 0), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(snn_set_loss_scaling_state(b.get(), 8.0, 2.0, 0.5, 10, 10), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(snn_last_error()).find("good steps"), std::string::npos);
    EXPECT_EQ(snn_set_loss_scaling(b.get(), 2), SNN_ERR_INVALID_ARGUMENT);
    int32_t on = 1;
    ASSERT_EQ(snn_loss_scaling_state(b.get(), &on, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr), SNN_OK);
    EXPECT_EQ(on, 0);
}

// The scale must be a finite float of at least FLT_MIN: 1e-46 is 0 as a
// float and 1e-40 subnormal (1 / 1e-40 overflows a float), either would
// skip every step. Nothing changes on a refusal.
TEST(LossScaling, AScaleBelowTheSmallestNormalFloatIsRefused) {
    Model model = make_model(kMlp);
    Backward b = make_backward(model.get(), 4);
    EXPECT_EQ(snn_set_loss_scaling_state(b.get(), 1e-46, 2.0, 0.5, 1, 0), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(snn_last_error()).find("the loss scale 1e-46 is 0 as a float"), std::string::npos)
        << snn_last_error();
    EXPECT_EQ(snn_set_loss_scaling_state(b.get(), 1e-40, 2.0, 0.5, 1, 0), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(snn_last_error()).find("at least FLT_MIN"), std::string::npos) << snn_last_error();
    int32_t on = 1;
    ASSERT_EQ(snn_loss_scaling_state(b.get(), &on, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr), SNN_OK);
    EXPECT_EQ(on, 0);
    ASSERT_EQ(snn_set_loss_scaling_state(b.get(), double(FLT_MIN), 2.0, 0.5, 1, 0), SNN_OK) << snn_last_error();
}

// Overflows at the smallest scale leave it at FLT_MIN, where a finite
// gradient is taken: training keeps stepping.
TEST(LossScaling, BackoffStopsAtTheSmallestNormalFloat) {
    Model model = make_model(kMlp);
    Forward f = make_forward(model.get(), 4);
    Backward b = make_backward(model.get(), 4);
    Optimiser opt = make_optimiser(model.get(), SNN_OPTIMISER_SGD);
    ASSERT_EQ(snn_set_loss_scaling_state(b.get(), double(FLT_MIN), 2.0, 0.5, 1000, 0), SNN_OK);
    snn_status status = SNN_ERR_INTERNAL;
    double scale = 0;
    int32_t skipped = 0;
    for (int overflow = 0; overflow < 3; ++overflow) {
        std::vector<float> g = mse_gradient(f.get(), b.get(), model.get(), 0.5f, &status);
        ASSERT_EQ(status, SNN_OK) << snn_last_error();
        g[0] = INFINITY;  // an overflow, summed over ranks, say
        ASSERT_EQ(snn_set_gradients(b.get(), g.data(), g.size()), SNN_OK);
        ASSERT_EQ(snn_loss_scaling_state(b.get(), nullptr, &scale, nullptr, nullptr, nullptr, nullptr, &skipped),
                  SNN_OK);
        EXPECT_EQ(skipped, 1);
        EXPECT_EQ(scale, double(FLT_MIN));
    }
    const std::vector<float> before = get_params(model.get());
    mse_gradient(f.get(), b.get(), model.get(), 0.5f, &status);
    ASSERT_EQ(status, SNN_OK) << snn_last_error();
    ASSERT_EQ(snn_loss_scaling_state(b.get(), nullptr, &scale, nullptr, nullptr, nullptr, nullptr, &skipped), SNN_OK);
    EXPECT_EQ(skipped, 0);
    EXPECT_EQ(scale, double(FLT_MIN));
    ASSERT_EQ(snn_optimiser_step(opt.get(), model.get(), b.get()), SNN_OK) << snn_last_error();
    EXPECT_NE(get_params(model.get()), before);
}

std::string temp_path(const char *name) {
    return std::string(testing::TempDir()) + "/snn_precision_" + std::to_string(getpid()) + "_" + name;
}

// A checkpoint written with a backward cache keeps its scaler; one without
// gives a cache no scaling; snn_checkpoint_load reads either.
TEST(LossScaling, CheckpointsKeepTheScaler) {
    Model model = make_model(kMlp);
    Backward b = make_backward(model.get(), 4), restored = make_backward(model.get(), 4);
    Optimiser opt = make_optimiser(model.get(), SNN_OPTIMISER_SGD);
    ASSERT_EQ(snn_set_loss_scaling_state(b.get(), 0.1, 3.0, 0.375, 7, 5), SNN_OK);
    const std::string with = temp_path("with.snn"), without = temp_path("without.snn");
    ASSERT_EQ(snn_checkpoint_save_v2(model.get(), opt.get(), b.get(), with.c_str()), SNN_OK) << snn_last_error();
    ASSERT_EQ(snn_checkpoint_save_v2(model.get(), opt.get(), nullptr, without.c_str()), SNN_OK);
    ASSERT_EQ(snn_checkpoint_load_loss_scaling(with.c_str(), restored.get()), SNN_OK) << snn_last_error();
    int32_t on = 0;
    double scale = 0, growth = 0, backoff = 0;
    int64_t interval = 0, good = 0;
    ASSERT_EQ(snn_loss_scaling_state(restored.get(), &on, &scale, &growth, &backoff, &interval, &good, nullptr),
              SNN_OK);
    EXPECT_EQ(on, 1);
    EXPECT_EQ(scale, 0.1);
    EXPECT_EQ(growth, 3.0);
    EXPECT_EQ(backoff, 0.375);
    EXPECT_EQ(interval, 7);
    EXPECT_EQ(good, 5);
    snn_model *m2 = nullptr;
    snn_optimiser *o2 = nullptr;
    ASSERT_EQ(snn_checkpoint_load(with.c_str(), &m2, &o2), SNN_OK) << snn_last_error();
    snn_optimiser_destroy(o2);
    snn_model_destroy(m2);
    ASSERT_EQ(snn_checkpoint_load_loss_scaling(without.c_str(), restored.get()), SNN_OK);
    ASSERT_EQ(snn_loss_scaling_state(restored.get(), &on, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
              SNN_OK);
    EXPECT_EQ(on, 0);
    const std::string plain = temp_path("model.snn");
    ASSERT_EQ(snn_model_save(model.get(), plain.c_str()), SNN_OK);
    EXPECT_EQ(snn_checkpoint_load_loss_scaling(plain.c_str(), restored.get()), SNN_ERR_FILE_FORMAT);
    unlink(with.c_str());
    unlink(without.c_str());
    unlink(plain.c_str());
}

// A backward cache of another model is refused, as snn_backprop refuses it;
// no file is written.
TEST(LossScaling, CheckpointsRefuseAnotherModelsCache) {
    Model model = make_model(kMlp), other = make_model(kMlp);
    Backward theirs = make_backward(other.get(), 4);
    Optimiser opt = make_optimiser(model.get(), SNN_OPTIMISER_SGD);
    ASSERT_EQ(snn_set_loss_scaling(theirs.get(), 1), SNN_OK);
    const std::string path = temp_path("other.snn");
    EXPECT_EQ(snn_checkpoint_save_v2(model.get(), opt.get(), theirs.get(), path.c_str()), SNN_ERR_MODEL_MISMATCH);
    EXPECT_NE(std::string(snn_last_error()).find("the backward cache was made for another model"), std::string::npos)
        << snn_last_error();
    EXPECT_NE(access(path.c_str(), F_OK), 0);
    unlink(path.c_str());
}

}  // namespace

// GPU paths the other comparisons leave out, each against the CPU backend:
// running statistics and dropout's pass counter carried through device
// moves and a checkpoint, backprop from a caller's output gradient, the
// finite check, gradients written by the caller (snn_set_gradients and
// snn_gradients_device), more than 10^5 features, and image softmax and
// global average pooling on maps far larger than a block of threads.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include "gpu_test.h"

using namespace gpu_test;

namespace {

// One model with a forward and a backward cache.
struct Side {
    Model model;
    Forward fwd;
    Backward bwd;
    Side(const char *spec, int64_t batch, int32_t device) : model(make_model(spec, 17)) {
        move_to(model.get(), device);
        fwd = make_forward(model.get(), batch);
        bwd = make_backward(model.get(), batch);
        CHECK_OK(snn_cache_set_seed(fwd.get(), 99));
    }
    // A training pass and backprop (MSE) on x and t; returns the loss.
    float train(const std::vector<float> &x, const std::vector<float> &t) {
        CHECK_OK(snn_set_inputs(fwd.get(), x.data(), x.size()));
        CHECK_OK(snn_forward(fwd.get(), model.get()));
        CHECK_OK(snn_set_targets(bwd.get(), t.data(), t.size()));
        float loss = 0.0f;
        CHECK_OK(snn_backprop(bwd.get(), fwd.get(), model.get(), SNN_LOSS_MSE, &loss));
        return loss;
    }
};

// Batchnorm's running statistics and dropout's pass counter go with the
// model and its caches GPU -> CPU -> GPU and through a checkpoint: the runs
// with moves match a run that stays on the CPU. The convolution has no bias:
// batchnorm cancels it, so its exact gradient is 0, and Adam turns the
// rounding noise each device leaves there into steps of about the learning
// rate that differ between devices.
void state_and_dropout_follow_moves(int32_t device) {
    const char *spec =
        "input 8x8x3; conv 3 6 pad=1 nobias; batchnorm; relu; dropout 0.3; globalavgpool; flatten; dense 4";
    const int64_t batch = 5;
    Side moved(spec, batch, device), cpu(spec, batch, SNN_DEVICE_CPU);
    Optimiser opt_m = make_optimiser(moved.model.get(), SNN_OPTIMISER_ADAM);
    Optimiser opt_c = make_optimiser(cpu.model.get(), SNN_OPTIMISER_ADAM);
    Random rnd(3);
    const size_t in = input_size(cpu.model.get()), out = output_size(cpu.model.get());
    for (int step = 0; step < 6; ++step) {
        if (step == 2) move_to(moved.model.get(), SNN_DEVICE_CPU);
        if (step == 4) move_to(moved.model.get(), device);
        const std::vector<float> x = rnd.floats(size_t(batch) * in, -1.0f, 1.0f);
        const std::vector<float> t = rnd.floats(size_t(batch) * out, -1.0f, 1.0f);
        const float lm = moved.train(x, t), lc = cpu.train(x, t);
        close(("loss at step " + std::to_string(step)).c_str(), lm, lc, 1e-4f, 1e-6f);
        CHECK_OK(snn_optimiser_step(opt_m.get(), moved.model.get(), moved.bwd.get()));
        CHECK_OK(snn_optimiser_step(opt_c.get(), cpu.model.get(), cpu.bwd.get()));
    }
    close("running statistics after moves", state_of(moved.model.get()), state_of(cpu.model.get()),
          1e-4f, 1e-5f);
    close("parameters after moves", parameters(moved.model.get()), parameters(cpu.model.get()),
          1e-4f, 1e-5f);
    uint64_t seed = 0, passes_m = 0, passes_c = 0;
    CHECK_OK(snn_cache_rng_state(moved.fwd.get(), &seed, &passes_m));
    CHECK_OK(snn_cache_rng_state(cpu.fwd.get(), &seed, &passes_c));
    CHECK(passes_m == 6 && passes_c == 6);

    // A file of this process's own in the temporary directory (also on
    // Windows, which has no mkdtemp).
    std::error_code ec;
    const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
    if (ec) {
        std::fprintf(stderr, "no temporary directory: %s\n", ec.message().c_str());
        ++failures();
        return;
    }
    const std::string path =
        (tmp / ("snn_coverage_" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) +
                ".safetensors"))
            .string();
    CHECK_OK(snn_checkpoint_save(moved.model.get(), opt_m.get(), path.c_str()));
    snn_model *loaded = nullptr;
    snn_optimiser *loaded_opt = nullptr;
    CHECK_OK(snn_checkpoint_load(path.c_str(), &loaded, &loaded_opt));
    Model back(loaded);
    Optimiser back_opt(loaded_opt);
    std::filesystem::remove(path, ec);
    if (!back) return;
    move_to(back.get(), device);
    CHECK(state_of(back.get()) == state_of(moved.model.get()));
    CHECK(parameters(back.get()) == parameters(moved.model.get()));
}

// snn_backprop_with_output_gradient on the GPU gives the CPU's gradients.
void output_gradient_backprop(int32_t device) {
    const char *spec = "input 10; dense 12 tanh; dense 6";
    const int64_t batch = 7;
    Side gpu(spec, batch, device), cpu(spec, batch, SNN_DEVICE_CPU);
    Random rnd(8);
    const std::vector<float> x = rnd.floats(size_t(batch) * 10, -1.0f, 1.0f);
    const std::vector<float> dy = rnd.floats(size_t(batch) * 6, -1.0f, 1.0f);
    for (Side *s : {&gpu, &cpu}) {
        CHECK_OK(snn_set_inputs(s->fwd.get(), x.data(), x.size()));
        CHECK_OK(snn_forward(s->fwd.get(), s->model.get()));
        CHECK_OK(snn_backprop_with_output_gradient(s->bwd.get(), s->fwd.get(), s->model.get(),
                                                   dy.data(), dy.size()));
    }
    const size_t n = param_count(cpu.model.get());
    close("gradients from an output gradient", gradients_of(gpu.bwd.get(), n),
          gradients_of(cpu.bwd.get(), n), 1e-4f, 1e-6f);
}

// With the finite check on, a NaN reaching the gradient is refused on the
// GPU as on the CPU, and the step that follows leaves the parameters alone.
void finite_check(int32_t device) {
    const char *spec = "input 4; dense 3";
    CHECK_OK(snn_set_check_finite(1));
    Side s(spec, 2, device);
    Optimiser sgd = make_optimiser(s.model.get(), SNN_OPTIMISER_SGD);
    std::vector<float> p = parameters(s.model.get());
    p[0] = 1e30f;  // overflows the products to inf, then inf - inf to NaN
    CHECK_OK(snn_set_parameters(s.model.get(), p.data(), p.size()));
    const std::vector<float> x = {1e30f, 1e30f, -1e30f, 1e30f, 1, 2, 3, 4}, t(6, 0.0f);
    CHECK_OK(snn_set_inputs(s.fwd.get(), x.data(), x.size()));
    CHECK_OK(snn_forward(s.fwd.get(), s.model.get()));
    CHECK_OK(snn_set_targets(s.bwd.get(), t.data(), t.size()));
    CHECK_STATUS(snn_backprop(s.bwd.get(), s.fwd.get(), s.model.get(), SNN_LOSS_MSE, nullptr),
                 SNN_ERR_NOT_FINITE);
    CHECK_STATUS(snn_optimiser_step(sgd.get(), s.model.get(), s.bwd.get()), SNN_ERR_NOT_FINITE);
    CHECK(parameters(s.model.get()) == p);
    const std::vector<float> nan_in(8, NAN);
    CHECK_STATUS(snn_set_inputs(s.fwd.get(), nan_in.data(), nan_in.size()), SNN_ERR_NOT_FINITE);
    CHECK_OK(snn_set_check_finite(0));
}

// A gradient written with snn_set_gradients reads back bit for bit, is what
// the device pointer of snn_gradients_device holds, and is what a step uses.
void caller_gradients(int32_t device) {
    const char *spec = "input 5; dense 4 relu; dense 2";
    Side s(spec, 3, device);
    const size_t n = param_count(s.model.get());
    Random rnd(12);
    const std::vector<float> g = rnd.floats(n, -1.0f, 1.0f);
    const std::vector<float> p0 = parameters(s.model.get());
    CHECK_OK(snn_set_gradients(s.bwd.get(), g.data(), n));
    CHECK(gradients_of(s.bwd.get(), n) == g);
    float *dev = nullptr;
    size_t count = 0;
    if (device == SNN_DEVICE_CPU) {
        CHECK_STATUS(snn_gradients_device(s.bwd.get(), &dev, &count), SNN_ERR_DEVICE_MISMATCH);
    } else {
        CHECK_OK(snn_gradients_device(s.bwd.get(), &dev, &count));
        CHECK(dev != nullptr && count == n);
        CHECK_OK(snn_backward_cache_synchronize(s.bwd.get()));
    }
    Optimiser sgd = make_optimiser(s.model.get(), SNN_OPTIMISER_SGD);
    CHECK_OK(snn_optimiser_set(sgd.get(), SNN_HP_LEARNING_RATE, 1.0));
    CHECK_OK(snn_optimiser_step(sgd.get(), s.model.get(), s.bwd.get()));
    std::vector<float> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = p0[i] - g[i];
    CHECK(parameters(s.model.get()) == want);
}

// Forward, loss and every gradient of `spec` at `batch`, GPU against CPU.
void compare_training(const char *what, const char *spec, int64_t batch, int32_t device, float rtol,
                      float atol) {
    Side gpu(spec, batch, device), cpu(spec, batch, SNN_DEVICE_CPU);
    CHECK_OK(snn_set_input_gradient(gpu.bwd.get(), 1));
    CHECK_OK(snn_set_input_gradient(cpu.bwd.get(), 1));
    const size_t in = input_size(cpu.model.get()), out = output_size(cpu.model.get());
    Random rnd(in + out);
    const std::vector<float> x = rnd.floats(size_t(batch) * in, -1.0f, 1.0f);
    const std::vector<float> t = rnd.floats(size_t(batch) * out, -1.0f, 1.0f);
    const float lg = gpu.train(x, t), lc = cpu.train(x, t);
    const std::string w = what;
    close((w + ": loss").c_str(), lg, lc, rtol, atol);
    close((w + ": outputs").c_str(), outputs_of(gpu.fwd.get(), size_t(batch) * out),
          outputs_of(cpu.fwd.get(), size_t(batch) * out), rtol, atol);
    const size_t n = param_count(cpu.model.get());
    close((w + ": gradients").c_str(), gradients_of(gpu.bwd.get(), n), gradients_of(cpu.bwd.get(), n),
          rtol, atol);
    std::vector<float> dg(size_t(batch) * in), dc(size_t(batch) * in);
    CHECK_OK(snn_get_input_gradients(gpu.bwd.get(), dg.data(), dg.size()));
    CHECK_OK(snn_get_input_gradients(cpu.bwd.get(), dc.data(), dc.size()));
    close((w + ": input gradients").c_str(), dg, dc, rtol, atol);
}

}  // namespace

int main() {
    const int32_t device = test_device();
    state_and_dropout_follow_moves(device);
    output_gradient_backprop(device);
    finite_check(device);
    caller_gradients(device);
    compare_training("100003 input features", "input 100003; dense 3 tanh", 3, device, 1e-3f, 1e-5f);
    // Outputs near 1e-5, gradients near 1e-10: the absolute floor sits below them.
    compare_training("softmax over 100003 outputs", "input 6; dense 100003; softmax", 2, device,
                     1e-3f, 1e-12f);
    compare_training("image softmax and globalavgpool on 150x130 maps",
                     "input 150x130x3; conv 3 5 pad=1; softmax; globalavgpool; flatten; dense 2", 3,
                     device, 1e-3f, 1e-6f);
    return finish("test_gpu_coverage");
}

// Every layer kind, activation and loss on the GPU against the CPU backend
// on random data: outputs, loss, parameter gradients and input gradients,
// at the full batch and at a smaller one (which re-plans the convolutions).
// Besides small shapes, sizes that take every kernel path: a batch of 257
// (more rows than one block of 256 threads, and an odd count for the
// reductions), dense layers of 1000 outputs and 1000 classes, and
// convolutions of 64 channels in and out on odd image sizes (the shapes for
// which cuDNN picks other algorithms than for a few channels).
#include "gpu_test.h"

using namespace gpu_test;

namespace {

// Per-element tolerances, |gpu - cpu| <= atol + rtol * |cpu| (gpu_test.h).
struct Tolerance {
    float forward_rtol, forward_atol;  // outputs and loss
    float grad_rtol, grad_atol;        // parameter gradients
    float input_grad_atol;             // input gradients (with grad_rtol)
};
// Plain fp32 on both sides: only the order of the sums differs (cuBLAS,
// cuDNN and the reductions against OpenBLAS and loops).
constexpr Tolerance kFp32 = {1e-4f, 1e-6f, 1e-3f, 1e-6f, 1e-7f};
// TF32 keeps 10 mantissa bits in the products, so an element's error scales
// with the size of the products summed into it rather than with its own
// value: each atol is a hundredth of the largest value of that quantity in
// the cases compared (outputs up to 0.8, parameter gradients 0.3, input
// gradients 0.006), the error an H100 shows being at most a quarter of it.
constexpr Tolerance kTf32 = {1e-2f, 1e-3f, 1e-2f, 5e-4f, 5e-5f};

struct Case {
    const char *what;
    const char *spec;
    int64_t max_batch = 8;    // the caches' size, and the first and last batch
    int64_t small_batch = 5;  // the batch in between
};

const Case kCases[] = {
    {"dense with every activation",
     "input 12; dense 16 relu; dense 10 leaky_relu; dense 8 tanh; dense 6 sigmoid; dense 5"},
    {"dense without bias", "input 7; dense 9 tanh nobias; dense 4 nobias"},
    {"conv with padding, max and average pooling",
     "input 9x9x3; conv 3x3 4 relu pad=1; maxpool 2; conv 2x2 5 tanh stride=2 nobias; "
     "avgpool 2 stride=1; flatten; dense 4 sigmoid"},
    {"overlapping max pooling",
     "input 10x10x2; conv 3x3 3 leaky_relu; maxpool 3 stride=2; flatten; dense 3"},
    {"overlapping average pooling",
     "input 7x7x2; avgpool 3 stride=2; conv 1x1 2 sigmoid; flatten; dense 2"},
    {"rectangular kernels, strides and padding",
     "input 11x8x1; conv 3x2 2 relu stride=2x1 pad=1x0; maxpool 2x3; flatten; dense 3"},
    {"the Fashion-MNIST network",
     "input 28x28x1; conv 5x5 16 relu; maxpool 2; conv 3x3 8 relu; maxpool 4; flatten; dense 10"},
    {"dense layers of 1000 outputs and 1000 classes",
     "input 40; dense 1000 relu; dense 1000 tanh; dense 1000", 257, 67},
    // No saturating activation before the max pooling: tanh of large sums
    // rounds to the same few floats near 1, and which of two such near-ties
    // wins a window may differ between the CPU and the GPU by a rounding,
    // sending the gradient elsewhere (a true difference of the two sides'
    // rounding, not an error of either).
    {"64 channels in and out, odd image sizes",
     "input 9x7x64; conv 3x3 64 relu pad=1; conv 3x3 64 leaky_relu stride=2; maxpool 2; "
     "conv 1x1 64 sigmoid; avgpool 2x1; conv 1x1 64 tanh; flatten; dense 10",
     257, 67},
};

const char *loss_name(snn_loss loss) {
    switch (loss) {
    case SNN_LOSS_MSE: return "mse";
    case SNN_LOSS_LOGIT_CROSSENTROPY: return "xent";
    case SNN_LOSS_HUBER: return "huber";
    case SNN_LOSS_SMOOTH_L1: return "smooth l1";
    default: return "bce with logits";
    }
}

// Runs forward and backprop with `loss` on two copies of `spec` (one on the
// CPU, one on `device`) for batches max, small, max and compares everything.
void compare(const Case &c, snn_loss loss, int32_t device, const Tolerance &tol) {
    const int64_t max_batch = c.max_batch;
    Model cpu = make_model(c.spec, 11);
    Model gpu = make_model(c.spec, 11);
    move_to(gpu.get(), device);
    Forward cpu_f = make_forward(cpu.get(), max_batch), gpu_f = make_forward(gpu.get(), max_batch);
    Backward cpu_b = make_backward(cpu.get(), max_batch),
             gpu_b = make_backward(gpu.get(), max_batch);
    CHECK_OK(snn_set_input_gradient(cpu_b.get(), 1));
    CHECK_OK(snn_set_input_gradient(gpu_b.get(), 1));
    // Parameters where residuals of about +-1 fall on both sides.
    if (loss == SNN_LOSS_HUBER || loss == SNN_LOSS_SMOOTH_L1) {
        CHECK_OK(snn_set_loss_parameter(cpu_b.get(), loss, 0.5));
        CHECK_OK(snn_set_loss_parameter(gpu_b.get(), loss, 0.5));
    }
    const size_t in = input_size(cpu.get()), out = output_size(cpu.get());
    const size_t params = param_count(cpu.get());
    Random rng(uint64_t(loss) * 1000 + in);

    for (int64_t n : {max_batch, c.small_batch, max_batch}) {
        std::string label = std::string(c.what) + ", " + loss_name(loss) +
                            ", batch " + std::to_string(n);
        std::vector<float> x = rng.floats(size_t(n) * in, -1.0f, 1.0f);
        std::vector<float> t = loss == SNN_LOSS_BCE_WITH_LOGITS ? rng.floats(size_t(n) * out, 0.0f, 1.0f)
                                                                : rng.floats(size_t(n) * out, -1.0f, 1.0f);
        std::vector<int32_t> labels = rng.labels(size_t(n), int32_t(out));

        std::vector<float> y[2], g[2], dx[2];
        float l[2] = {0.0f, 0.0f};
        snn_model *models[2] = {cpu.get(), gpu.get()};
        snn_forward_cache *fs[2] = {cpu_f.get(), gpu_f.get()};
        snn_backward_cache *bs[2] = {cpu_b.get(), gpu_b.get()};
        for (int side = 0; side < 2; ++side) {
            CHECK_OK(snn_cache_set_batch(fs[side], n));
            CHECK_OK(snn_set_inputs(fs[side], x.data(), x.size()));
            CHECK_OK(snn_forward(fs[side], models[side]));
            y[side].resize(size_t(n) * out);
            CHECK_OK(snn_get_outputs(fs[side], y[side].data(), y[side].size()));
            if (loss != SNN_LOSS_LOGIT_CROSSENTROPY)
                CHECK_OK(snn_set_targets(bs[side], t.data(), t.size()));
            else
                CHECK_OK(snn_set_labels(bs[side], labels.data(), labels.size()));
            CHECK_OK(snn_backprop(bs[side], fs[side], models[side], loss, &l[side]));
            g[side].resize(params);
            CHECK_OK(snn_get_gradients(bs[side], g[side].data(), params));
            dx[side].resize(size_t(n) * in);
            CHECK_OK(snn_get_input_gradients(bs[side], dx[side].data(), dx[side].size()));
        }
        close((label + ": outputs").c_str(), y[1], y[0], tol.forward_rtol, tol.forward_atol);
        close((label + ": loss").c_str(), l[1], l[0], tol.forward_rtol, tol.forward_atol);
        close((label + ": parameter gradients").c_str(), g[1], g[0], tol.grad_rtol, tol.grad_atol);
        close((label + ": input gradients").c_str(), dx[1], dx[0], tol.grad_rtol,
              tol.input_grad_atol);
    }
}

// The same inputs give bit-identical outputs and gradients on the GPU
// (deterministic algorithms and reductions, no float atomics).
void check_reproducible(const Case &c, int32_t device) {
    Model m = make_model(c.spec, 5);
    move_to(m.get(), device);
    const size_t in = input_size(m.get()), out = output_size(m.get()),
                 params = param_count(m.get());
    Random rng(99);
    std::vector<float> x = rng.floats(16 * in, -1.0f, 1.0f);
    std::vector<int32_t> labels = rng.labels(16, int32_t(out));
    std::vector<float> g[2];
    float l[2];
    for (int run = 0; run < 2; ++run) {
        Forward f = make_forward(m.get(), 16);
        Backward b = make_backward(m.get(), 16);
        CHECK_OK(snn_set_inputs(f.get(), x.data(), x.size()));
        CHECK_OK(snn_forward(f.get(), m.get()));
        CHECK_OK(snn_set_labels(b.get(), labels.data(), labels.size()));
        CHECK_OK(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &l[run]));
        g[run].resize(params);
        CHECK_OK(snn_get_gradients(b.get(), g[run].data(), params));
    }
    CHECK(std::memcmp(&l[0], &l[1], sizeof(float)) == 0);
    CHECK(g[0] == g[1]);
}

}  // namespace

int main() {
    const int32_t device = test_device();
    for (const Case &c : kCases) {
        compare(c, SNN_LOSS_MSE, device, kFp32);
        compare(c, SNN_LOSS_LOGIT_CROSSENTROPY, device, kFp32);
        for (snn_loss loss : {SNN_LOSS_HUBER, SNN_LOSS_SMOOTH_L1, SNN_LOSS_BCE_WITH_LOGITS})
            compare(c, loss, device, kFp32);
        check_reproducible(c, device);
    }

    // TF32 applies to caches created after it is allowed.
    CHECK_OK(snn_set_allow_tf32(1));
    compare(kCases[0], SNN_LOSS_MSE, device, kTf32);
    compare(kCases[6], SNN_LOSS_LOGIT_CROSSENTROPY, device, kTf32);
    CHECK_OK(snn_set_allow_tf32(0));
    return finish("gpu layers");
}

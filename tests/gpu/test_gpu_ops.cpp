// The ops beyond dense, conv and pooling on the GPU against the CPU backend,
// in training and in inference mode: batchnorm (images and vectors, in a
// residual block with add and globalavgpool), layernorm, dropout, softmax
// (vectors and images), each standalone activation, dense layers with
// gelu and silu joined by concat, posembed, conv1d and seqpool, and lstm
// and gru. Both sides start from equal parameters
// and equal running statistics (random, so that weight, bias and the
// inference statistics matter) and take the same passes; the outputs,
// parameter gradients, input gradients and the state after every pass are
// compared, and dropout's masks must be the same on both (same seed).
#include "gpu_test.h"

using namespace gpu_test;

namespace {

// Per-element tolerances, |gpu - cpu| <= atol + rtol * |cpu| (gpu_test.h).
// Plain fp32 on both sides; the statistics are summed in double on both,
// but the convolutions and products before them sum in another order, and
// normalising divides those differences by the spread of each channel or
// sample.
struct Tolerance {
    float forward_rtol, forward_atol;  // outputs
    float grad_rtol, grad_atol;        // parameter gradients
    float input_grad_atol;             // input gradients (with grad_rtol)
    float state_rtol, state_atol;      // running statistics
};
constexpr Tolerance kFp32 = {1e-4f, 1e-5f, 1e-3f, 1e-5f, 1e-6f, 1e-5f, 1e-6f};

struct Case {
    const char *what;
    const char *spec;
    int64_t max_batch = 8;    // the caches' size, and the first and last batch
    int64_t small_batch = 5;  // the batch in between
};

const Case kCases[] = {
    {"batchnorm in a residual block",
     "input 6x6x3; conv 3 4 pad=1 name=a; batchnorm; relu; conv 3 4 pad=1; batchnorm; add a; "
     "relu; globalavgpool; flatten; dense 3"},
    {"batchnorm of vectors, eps and momentum set",
     "input 10; dense 8; batchnorm eps=0.001 momentum=0.25; tanh; dense 3"},
    {"gelu, layernorm, dropout, silu and concat",
     "input 10; dense 8 gelu name=h; layernorm; dropout 0.3; dense 8 silu; concat h; dense 3"},
    {"layernorm of images",
     "input 5x4x3; conv 3 2 pad=1 silu; layernorm eps=0.0001; flatten; dense 2"},
    {"softmax of vectors", "input 12; dense 7; softmax"},
    {"softmax of images", "input 5x4x3; conv 3 6 pad=1; softmax; flatten; dense 2"},
    {"standalone relu", "input 11; dense 13; relu; dense 3"},
    {"standalone leaky_relu", "input 11; dense 13; leaky_relu; dense 3"},
    {"standalone tanh", "input 11; dense 13; tanh; dense 3"},
    {"standalone sigmoid", "input 11; dense 13; sigmoid; dense 3"},
    {"standalone gelu", "input 11; dense 13; gelu; dense 3"},
    {"standalone silu", "input 11; dense 13; silu; dense 3"},
    {"standalone activations of images",
     "input 5x5x2; conv 3 3 pad=1; gelu; conv 3 3 pad=1; sigmoid; flatten; dense 2"},
    {"dropout of images", "input 6x6x2; conv 3 2 pad=1; dropout 0.5; flatten; dense 3"},
    {"posembed, conv1d and seqpool of sequences",
     "input seq 9x6; posembed; conv1d 3 8 relu pad=1; conv1d 2 5 gelu stride=2 dilation=2; seqpool max; "
     "dense 3"},
    // conv1d's lowering in chunks of 13 samples (2^22 floats of 1000 x 320).
    {"conv1d over several lowered chunks", "input seq 1000x64; conv1d 5 8 pad=2 tanh; seqpool mean; dense 2",
     40, 17},
    {"lstm and gru, both directions and the final state",
     "input seq 6x4; lstm 8 bidirectional; gru 5 last; dense 3"},
    // More values per channel, per sample and per softmax than one block
    // of 256 threads holds, and odd counts for the reductions.
    {"batch 257 and 300 features",
     "input 20; dense 300; batchnorm; layernorm; dropout 0.2; softmax", 257, 67},
    {"batch 257 of images",
     "input 7x5x3; conv 3 5 pad=1; batchnorm; gelu; softmax; globalavgpool; flatten; dense 4", 257,
     67},
};

std::vector<float> state(const snn_model *m) {
    size_t count = 0;
    CHECK_OK(snn_state_count(m, &count));
    std::vector<float> s(count);
    CHECK_OK(snn_get_state(m, s.data(), s.size()));
    return s;
}

// Random parameters and running statistics (means in [-0.5, 0.5), variances
// in [0.5, 1.5), counts 0), the same on every model given.
void randomise(snn_model *const *models, int count, uint64_t seed) {
    Random rng(seed);
    std::vector<float> p = parameters(models[0]);
    for (float &v : p) v += rng.uniform(-0.3f, 0.3f);
    std::vector<float> s = state(models[0]);
    int64_t layers = 0;
    CHECK_OK(snn_model_layer_count(models[0], &layers));
    for (int64_t l = 0; l < layers; ++l) {
        size_t offset = 0, n = 0;
        CHECK_OK(snn_model_layer_state(models[0], l, &offset, &n));
        if (n == 0) continue;
        const size_t c = (n - 1) / 2;  // batchnorm: mean [c], var [c], count
        for (size_t i = 0; i < c; ++i) {
            s[offset + i] = rng.uniform(-0.5f, 0.5f);
            s[offset + c + i] = rng.uniform(0.5f, 1.5f);
        }
        s[offset + 2 * c] = 0.0f;
    }
    for (int i = 0; i < count; ++i) {
        CHECK_OK(snn_set_parameters(models[i], p.data(), p.size()));
        CHECK_OK(snn_set_state(models[i], s.data(), s.size()));
    }
}

// Where the CPU's output is exactly 0 (a dropped element, or a ReLU's), the
// GPU's is too, and the other way round.
void same_zeros(const std::string &what, const std::vector<float> &gpu,
                const std::vector<float> &cpu) {
    size_t differ = 0;
    for (size_t i = 0; i < cpu.size() && i < gpu.size(); ++i)
        if ((cpu[i] == 0.0f) != (gpu[i] == 0.0f)) ++differ;
    if (differ > 0) {
        std::fprintf(stderr, "%s: %zu of %zu elements are 0 on one side only\n", what.c_str(),
                     differ, cpu.size());
        ++failures();
    }
}

// Runs forward and backprop (MSE) on two copies of `spec`, one on the CPU
// and one on `device`, for batches max, small, max in one mode, and
// compares everything after each pass.
void compare(const Case &c, bool training, int32_t device, const Tolerance &tol) {
    const int64_t max_batch = c.max_batch;
    Model cpu = make_model(c.spec, 11);
    Model gpu = make_model(c.spec, 11);
    snn_model *models[2] = {cpu.get(), gpu.get()};
    randomise(models, 2, 5);
    move_to(gpu.get(), device);
    const std::vector<float> initial_state = state(cpu.get());

    Forward fs[2] = {make_forward(cpu.get(), max_batch), make_forward(gpu.get(), max_batch)};
    Backward bs[2] = {make_backward(cpu.get(), max_batch), make_backward(gpu.get(), max_batch)};
    for (int side = 0; side < 2; ++side) {
        CHECK_OK(snn_cache_set_training(fs[side].get(), training ? 1 : 0));
        CHECK_OK(snn_cache_set_seed(fs[side].get(), 2024));
        CHECK_OK(snn_set_input_gradient(bs[side].get(), 1));
    }
    const size_t in = input_size(cpu.get()), out = output_size(cpu.get());
    const size_t params = param_count(cpu.get());
    Random rng(in * 31 + out);

    for (int64_t n : {max_batch, c.small_batch, max_batch}) {
        const std::string label = std::string(c.what) + (training ? ", training" : ", inference") +
                                  ", batch " + std::to_string(n);
        std::vector<float> x = rng.floats(size_t(n) * in, -1.0f, 1.0f);
        std::vector<float> t = rng.floats(size_t(n) * out, -1.0f, 1.0f);

        std::vector<float> y[2], g[2], dx[2], s[2];
        for (int side = 0; side < 2; ++side) {
            CHECK_OK(snn_cache_set_batch(fs[side].get(), n));
            CHECK_OK(snn_set_inputs(fs[side].get(), x.data(), x.size()));
            CHECK_OK(snn_forward(fs[side].get(), models[side]));
            y[side].resize(size_t(n) * out);
            CHECK_OK(snn_get_outputs(fs[side].get(), y[side].data(), y[side].size()));
            CHECK_OK(snn_set_targets(bs[side].get(), t.data(), t.size()));
            float loss = 0.0f;
            CHECK_OK(
                snn_backprop(bs[side].get(), fs[side].get(), models[side], SNN_LOSS_MSE, &loss));
            g[side].resize(params);
            CHECK_OK(snn_get_gradients(bs[side].get(), g[side].data(), params));
            dx[side].resize(size_t(n) * in);
            CHECK_OK(snn_get_input_gradients(bs[side].get(), dx[side].data(), dx[side].size()));
            s[side] = state(models[side]);
        }
        close((label + ": outputs").c_str(), y[1], y[0], tol.forward_rtol, tol.forward_atol);
        same_zeros(label + ": outputs", y[1], y[0]);
        close((label + ": parameter gradients").c_str(), g[1], g[0], tol.grad_rtol, tol.grad_atol);
        close((label + ": input gradients").c_str(), dx[1], dx[0], tol.grad_rtol,
              tol.input_grad_atol);
        close((label + ": state").c_str(), s[1], s[0], tol.state_rtol, tol.state_atol);
        // Inference mode only reads the model.
        if (!training) CHECK(s[0] == initial_state && s[1] == initial_state);
    }
}

// Dropout alone at the output: in training mode the same elements are
// dropped on both sides, pass after pass (the mask moves on each pass), and
// about p of them; in inference mode none is.
void dropout_masks_match(bool training, int32_t device) {
    const char *spec = "input 30; dense 50; dropout 0.4";
    const int64_t batch = 64;
    Model cpu = make_model(spec, 3);
    Model gpu = make_model(spec, 3);
    move_to(gpu.get(), device);
    snn_model *models[2] = {cpu.get(), gpu.get()};
    Forward fs[2] = {make_forward(cpu.get(), batch), make_forward(gpu.get(), batch)};
    for (Forward &f : fs) {
        CHECK_OK(snn_cache_set_training(f.get(), training ? 1 : 0));
        CHECK_OK(snn_cache_set_seed(f.get(), 99));
    }
    Random rng(4);
    const std::vector<float> x = rng.floats(size_t(batch) * 30, -1.0f, 1.0f);
    std::vector<float> previous;
    for (int pass = 0; pass < 3; ++pass) {
        std::vector<float> y[2];
        for (int side = 0; side < 2; ++side) {
            CHECK_OK(snn_set_inputs(fs[side].get(), x.data(), x.size()));
            CHECK_OK(snn_forward(fs[side].get(), models[side]));
            y[side].resize(size_t(batch) * 50);
            CHECK_OK(snn_get_outputs(fs[side].get(), y[side].data(), y[side].size()));
        }
        const std::string label = std::string("dropout mask, ") +
                                  (training ? "training" : "inference") + ", pass " +
                                  std::to_string(pass);
        same_zeros(label, y[1], y[0]);
        close(label.c_str(), y[1], y[0], 1e-5f, 1e-6f);
        size_t zeros = 0;
        for (float v : y[0]) zeros += v == 0.0f;
        const double dropped = double(zeros) / double(y[0].size());
        if (training)
            CHECK(dropped > 0.3 && dropped < 0.5);
        else
            CHECK(zeros == 0);
        if (training && pass > 0) CHECK(y[0] != previous);
        previous = y[0];
    }
}

// The same inputs give bit-identical outputs, gradients and state on the
// GPU: deterministic reductions, no float atomics.
void check_reproducible(const Case &c, int32_t device) {
    std::vector<float> y[2], g[2], s[2];
    Random rng(99);
    Model first = make_model(c.spec, 5);
    const size_t in = input_size(first.get()), out = output_size(first.get()),
                 params = param_count(first.get());
    const std::vector<float> x = rng.floats(16 * in, -1.0f, 1.0f);
    const std::vector<float> t = rng.floats(16 * out, -1.0f, 1.0f);
    for (int run = 0; run < 2; ++run) {
        Model m = make_model(c.spec, 5);
        snn_model *raw = m.get();
        randomise(&raw, 1, 8);
        move_to(m.get(), device);
        Forward f = make_forward(m.get(), 16);
        Backward b = make_backward(m.get(), 16);
        CHECK_OK(snn_cache_set_seed(f.get(), 7));
        CHECK_OK(snn_set_inputs(f.get(), x.data(), x.size()));
        CHECK_OK(snn_forward(f.get(), m.get()));
        y[run].resize(16 * out);
        CHECK_OK(snn_get_outputs(f.get(), y[run].data(), y[run].size()));
        CHECK_OK(snn_set_targets(b.get(), t.data(), t.size()));
        float loss = 0.0f;
        CHECK_OK(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_MSE, &loss));
        g[run].resize(params);
        CHECK_OK(snn_get_gradients(b.get(), g[run].data(), params));
        s[run] = state(m.get());
    }
    CHECK(y[0] == y[1]);
    CHECK(g[0] == g[1]);
    CHECK(s[0] == s[1]);
}

}  // namespace

int main() {
    const int32_t device = test_device();
    for (const Case &c : kCases) {
        compare(c, true, device, kFp32);
        compare(c, false, device, kFp32);
        check_reproducible(c, device);
    }
    dropout_masks_match(true, device);
    dropout_masks_match(false, device);
    return finish("gpu ops");
}

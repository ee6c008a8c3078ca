// The order of GPU work across streams. Each cache, backward cache and
// optimiser queues its work on its own CUDA stream and calls return before
// the GPU ran it, so every write of a shared buffer must come after the
// reads queued before it, and every read after the writes queued before it,
// as the calls were made on one thread. Each check queues long work first
// (hundreds of milliseconds of forward passes at batch 4096), makes the
// racing call while that work is still queued, then compares with the CPU
// running the same calls one after another: a missing order gives values of
// the wrong side of the race, not a tolerance miss.
//
// Also: snn_set_inputs_device against the caller's default streams, the
// calling thread's current device kept by every call, cuDNN's 2^31-element
// limit, and convolutions at every batch up to a max_batch past the batches
// whose workspace is asked at preallocation.
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "gpu_test.h"

using namespace gpu_test;

namespace {

// Wide enough that one forward pass at kLongBatch takes milliseconds.
const char *kWide = "input 1024; dense 4096 relu; dense 4096 relu; dense 4096 relu; dense 16";
const char *kWideNorm =
    "input 1024; dense 4096; batchnorm; relu; dense 4096; batchnorm; relu; dense 16";
const int64_t kLongBatch = 4096;
const int kLongPasses = 30;
const int64_t kProbe = 8;  // rows of the long batch compared with the CPU

#define CHECK_CUDA(call)                                                                \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess) {                                                        \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,          \
                         cudaGetErrorString(e_));                                       \
            ++gpu_test::failures();                                                     \
        }                                                                               \
    } while (0)

// A CPU model holding `params` and `state`.
Model cpu_copy(const char *spec, const std::vector<float> &params, const std::vector<float> &state) {
    Model m = make_model(spec, 1);
    CHECK_OK(snn_set_parameters(m.get(), params.data(), params.size()));
    if (!state.empty()) CHECK_OK(snn_set_state(m.get(), state.data(), state.size()));
    return m;
}

// The CPU's inference outputs of the first kProbe rows of x.
std::vector<float> cpu_probe(const char *spec, const std::vector<float> &params,
                             const std::vector<float> &state, const std::vector<float> &x) {
    Model m = cpu_copy(spec, params, state);
    Forward f = make_forward(m.get(), kProbe);
    CHECK_OK(snn_cache_set_training(f.get(), 0));
    const size_t in = input_size(m.get());
    CHECK_OK(snn_set_inputs(f.get(), x.data(), size_t(kProbe) * in));
    CHECK_OK(snn_forward(f.get(), m.get()));
    return outputs_of(f.get(), size_t(kProbe) * output_size(m.get()));
}

// kLongPasses forward passes of a kLongBatch cache, queued and not waited for.
void queue_long_passes(snn_forward_cache *f, const snn_model *m) {
    for (int i = 0; i < kLongPasses; ++i) CHECK_OK(snn_forward(f, m));
}

std::vector<float> first_rows(const std::vector<float> &y, size_t rows, size_t width) {
    return std::vector<float>(y.begin(), y.begin() + long(rows * width));
}

enum class Write { parameters, state, init, step };

// A long inference pass queued on one cache, then a write of the model from
// the calling thread: the pass must see the values from before the write.
void write_after_queued_forward(Write write, const char *name) {
    const char *spec = write == Write::state ? kWideNorm : kWide;
    Model model = make_model(spec, 7);
    move_to(model.get(), 0);
    Random rnd(11);
    const size_t in = input_size(model.get()), out = output_size(model.get());
    const std::vector<float> x = rnd.floats(size_t(kLongBatch) * in, -1.0f, 1.0f);
    std::vector<float> state = state_of(model.get());
    if (write == Write::state) {
        // Running statistics that differ from their initial values, whole
        // numbers so that num_batches_tracked is a count snn_set_state takes.
        state = rnd.floats(state.size(), 2.0f, 6.0f);
        for (float &v : state) v = std::floor(v);
        CHECK_OK(snn_set_state(model.get(), state.data(), state.size()));
    }
    const std::vector<float> params = parameters(model.get());

    Forward reader = make_forward(model.get(), kLongBatch);
    CHECK_OK(snn_cache_set_training(reader.get(), 0));
    CHECK_OK(snn_set_inputs(reader.get(), x.data(), x.size()));
    // The step's own caches, at batch 1, made before the long work.
    Forward fwd = make_forward(model.get(), 1);
    Backward bwd = make_backward(model.get(), 1);
    Optimiser sgd = make_optimiser(model.get(), SNN_OPTIMISER_SGD);
    CHECK_OK(snn_optimiser_set(sgd.get(), SNN_HP_LEARNING_RATE, 10.0));
    const std::vector<float> one(in, 1.0f), target(out, 100.0f);
    CHECK_OK(snn_set_inputs(fwd.get(), one.data(), in));
    CHECK_OK(snn_set_targets(bwd.get(), target.data(), out));

    queue_long_passes(reader.get(), model.get());
    switch (write) {
        case Write::parameters: {
            const std::vector<float> zeros(params.size(), 0.0f);
            CHECK_OK(snn_set_parameters(model.get(), zeros.data(), zeros.size()));
            break;
        }
        case Write::state: {
            const std::vector<float> other(state.size(), 100.0f);
            CHECK_OK(snn_set_state(model.get(), other.data(), other.size()));
            break;
        }
        case Write::init: CHECK_OK(snn_model_init(model.get(), 999)); break;
        case Write::step:
            CHECK_OK(snn_forward(fwd.get(), model.get()));
            CHECK_OK(snn_backprop(bwd.get(), fwd.get(), model.get(), SNN_LOSS_MSE, nullptr));
            CHECK_OK(snn_optimiser_step(sgd.get(), model.get(), bwd.get()));
            break;
    }
    const std::vector<float> got = first_rows(outputs_of(reader.get(), x.size() / in * out), kProbe, out);
    close(name, got, cpu_probe(spec, params, state, x), 1e-3f, 1e-3f);
    // The write happened.
    if (write == Write::state)
        CHECK(state_of(model.get()) != state);
    else
        CHECK(parameters(model.get()) != params);
}

// A model whose training passes write running statistics: the model's
// stream waits for them, so a step queued after them is delayed too.
struct Delayed {
    Model model = make_model(kWideNorm, 3);
    Forward trainer;
    Backward bwd;
    std::vector<float> x;

    Delayed() {
        move_to(model.get(), 0);
        trainer = make_forward(model.get(), kLongBatch);
        bwd = make_backward(model.get(), 1);
        Random rnd(5);
        x = rnd.floats(size_t(kLongBatch) * input_size(model.get()), -1.0f, 1.0f);
        CHECK_OK(snn_set_inputs(trainer.get(), x.data(), x.size()));
    }
    void queue() { queue_long_passes(trainer.get(), model.get()); }
};

// snn_set_gradients right after a step still queued: the step reads the
// gradient from before. SGD with rate 1 makes the result exact.
void set_gradients_after_queued_step() {
    Delayed d;
    const size_t n = param_count(d.model.get());
    Random rnd(9);
    const std::vector<float> g1 = rnd.floats(n, -1.0f, 1.0f), g2(n, 1000.0f);
    const std::vector<float> p0 = parameters(d.model.get());
    Optimiser sgd = make_optimiser(d.model.get(), SNN_OPTIMISER_SGD);
    CHECK_OK(snn_optimiser_set(sgd.get(), SNN_HP_LEARNING_RATE, 1.0));
    CHECK_OK(snn_set_gradients(d.bwd.get(), g1.data(), n));
    d.queue();
    CHECK_OK(snn_optimiser_step(sgd.get(), d.model.get(), d.bwd.get()));
    CHECK_OK(snn_set_gradients(d.bwd.get(), g2.data(), n));
    std::vector<float> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = p0[i] - g1[i];
    close("snn_set_gradients after a queued step", parameters(d.model.get()), want, 1e-6f, 0.0f);
}

// snn_optimiser_reset right after a step still queued, then another step:
// the second step starts from zero moments, as on the CPU.
void reset_after_queued_step() {
    Delayed d;
    const size_t n = param_count(d.model.get());
    Random rnd(13);
    const std::vector<float> g = rnd.floats(n, -1.0f, 1.0f);
    const std::vector<float> p0 = parameters(d.model.get());
    Optimiser adam = make_optimiser(d.model.get(), SNN_OPTIMISER_ADAM);
    CHECK_OK(snn_set_gradients(d.bwd.get(), g.data(), n));
    d.queue();
    CHECK_OK(snn_optimiser_step(adam.get(), d.model.get(), d.bwd.get()));
    CHECK_OK(snn_optimiser_reset(adam.get()));
    CHECK_OK(snn_optimiser_step(adam.get(), d.model.get(), d.bwd.get()));
    int64_t steps = -1;
    CHECK_OK(snn_optimiser_step_count(adam.get(), &steps));
    CHECK(steps == 1);

    Model cpu = cpu_copy(kWideNorm, p0, {});
    Backward cbwd = make_backward(cpu.get(), 1);
    Optimiser cadam = make_optimiser(cpu.get(), SNN_OPTIMISER_ADAM);
    CHECK_OK(snn_set_gradients(cbwd.get(), g.data(), n));
    CHECK_OK(snn_optimiser_step(cadam.get(), cpu.get(), cbwd.get()));
    CHECK_OK(snn_optimiser_reset(cadam.get()));
    CHECK_OK(snn_optimiser_step(cadam.get(), cpu.get(), cbwd.get()));
    close("snn_optimiser_reset after a queued step", parameters(d.model.get()), parameters(cpu.get()),
          1e-5f, 1e-7f);
}

// A kernel queue of about 100 ms on `stream`: memsets of a 1 GiB buffer.
void queue_long_memsets(void *scratch, size_t bytes, cudaStream_t stream) {
    for (int i = 0; i < 300; ++i) CHECK_CUDA(cudaMemsetAsync(scratch, i & 0xff, bytes, stream));
}

// The source of snn_set_inputs_device is written by work queued on the
// caller's default stream just before the call and overwritten and freed
// just after it: the cache gets the values written before.
void inputs_device_after_default_stream(cudaStream_t stream, const char *name) {
    const char *spec = "input 64; dense 8 tanh; dense 4";
    const int64_t batch = 32;
    Model model = make_model(spec, 21);
    const std::vector<float> params = parameters(model.get());
    move_to(model.get(), 0);
    Forward f = make_forward(model.get(), batch);
    Random rnd(17);
    const std::vector<float> x = rnd.floats(size_t(batch) * 64, -1.0f, 1.0f);
    const size_t bytes = x.size() * sizeof(float);

    const size_t scratch_bytes = size_t(1) << 30;
    void *scratch = nullptr;
    float *src = nullptr, *host = nullptr;
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaMalloc(&scratch, scratch_bytes));
    CHECK_CUDA(cudaMalloc(reinterpret_cast<void **>(&src), bytes));
    CHECK_CUDA(cudaMallocHost(reinterpret_cast<void **>(&host), bytes));
    if (scratch == nullptr || src == nullptr || host == nullptr) return;
    std::memcpy(host, x.data(), bytes);
    CHECK_CUDA(cudaMemset(src, 0, bytes));
    CHECK_CUDA(cudaDeviceSynchronize());

    queue_long_memsets(scratch, scratch_bytes, stream);
    CHECK_CUDA(cudaMemcpyAsync(src, host, bytes, cudaMemcpyHostToDevice, stream));
    CHECK_OK(snn_set_inputs_device(f.get(), src, x.size()));
    CHECK_CUDA(cudaMemsetAsync(src, 0xff, bytes, stream));  // NaN in every float
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK_CUDA(cudaFree(src));
    CHECK_OK(snn_forward(f.get(), model.get()));
    const std::vector<float> got = outputs_of(f.get(), size_t(batch) * 4);

    Model cpu = cpu_copy(spec, params, {});
    Forward cf = make_forward(cpu.get(), batch);
    CHECK_OK(snn_set_inputs(cf.get(), x.data(), x.size()));
    CHECK_OK(snn_forward(cf.get(), cpu.get()));
    close(name, got, outputs_of(cf.get(), size_t(batch) * 4), 1e-4f, 1e-5f);
    CHECK_CUDA(cudaFree(scratch));
    CHECK_CUDA(cudaFreeHost(host));
}

// Every call leaves the thread's current device as it was: the host's
// device is 1 where there are two GPUs (snn's model on 0), else 0.
void current_device_kept() {
    int count = 0;
    CHECK_CUDA(cudaGetDeviceCount(&count));
    const int mine = count >= 2 ? 1 : 0;
    if (count < 2)
        std::printf("one GPU: the host keeps device 0, which snn uses too (two GPUs test more)\n");
    CHECK_CUDA(cudaSetDevice(mine));
    auto kept = [mine](const char *call) {
        int now = -1;
        CHECK_CUDA(cudaGetDevice(&now));
        if (now != mine) {
            std::fprintf(stderr, "%s left device %d current, the host had %d\n", call, now, mine);
            ++failures();
            CHECK_CUDA(cudaSetDevice(mine));
        }
    };
#define KEPT(call)        \
    do {                  \
        CHECK_OK(call);   \
        kept(#call);      \
    } while (0)
    const char *spec = "input 6x6x2; conv 3x3 4 relu; batchnorm; flatten; dense 3";
    snn_model *m = nullptr;
    KEPT(snn_model_create(spec, &m));
    KEPT(snn_to_gpu(m, 0));
    KEPT(snn_model_init(m, 4));
    snn_forward_cache *f = nullptr;
    snn_backward_cache *b = nullptr;
    snn_optimiser *o = nullptr;
    KEPT(snn_preallocate(m, 4, &f));
    KEPT(snn_preallocate_grads(m, 4, &b));
    KEPT(snn_optimiser_create(m, SNN_OPTIMISER_ADAM, &o));
    Random rnd(3);
    const std::vector<float> x = rnd.floats(4 * 72, -1.0f, 1.0f), t = rnd.floats(12, -1.0f, 1.0f);
    KEPT(snn_set_inputs(f, x.data(), x.size()));
    KEPT(snn_forward(f, m));
    std::vector<float> y(12);
    KEPT(snn_get_outputs(f, y.data(), y.size()));
    KEPT(snn_set_targets(b, t.data(), t.size()));
    float loss = 0;
    KEPT(snn_backprop(b, f, m, SNN_LOSS_MSE, &loss));
    KEPT(snn_optimiser_step(o, m, b));
    KEPT(snn_backward_cache_synchronize(b));
    KEPT(snn_optimiser_reset(o));
    std::vector<float> p(param_count(m));
    KEPT(snn_get_parameters(m, p.data(), p.size()));
    KEPT(snn_set_parameters(m, p.data(), p.size()));
    std::vector<float> s = state_of(m);
    KEPT(snn_set_state(m, s.data(), s.size()));
    KEPT(snn_to_cpu(m));
    KEPT(snn_to_gpu(m, 0));
    KEPT(snn_forward(f, m));  // follows the model
    snn_optimiser_destroy(o);
    kept("snn_optimiser_destroy");
    snn_backward_cache_destroy(b);
    kept("snn_backward_cache_destroy");
    snn_forward_cache_destroy(f);
    kept("snn_forward_cache_destroy");
    snn_model_destroy(m);
    kept("snn_model_destroy");
#undef KEPT
    CHECK_CUDA(cudaSetDevice(0));
}

// cuDNN's descriptors count elements in an int: a conv whose output at
// max_batch holds 2^31 or more is refused before any large allocation,
// with a status and a message naming the layer and the limit.
void cudnn_element_limit() {
    // 256 x 256 x 64 = 4 194 304 outputs per image: at most 511 images. The
    // pooled outputs keep the backward cache's host staging small.
    Model m = make_model("input 256x256x1; conv 3x3 64 pad=1; globalavgpool; flatten; dense 2", 1);
    move_to(m.get(), 0);
    snn_forward_cache *f = nullptr;
    CHECK_STATUS(snn_preallocate(m.get(), 600, &f), SNN_ERR_UNSUPPORTED);
    CHECK(f == nullptr);
    const std::string why = snn_last_error();
    CHECK(why.find("layer 1") != std::string::npos);
    CHECK(why.find("2^31") != std::string::npos);
    CHECK(why.find("at most 511") != std::string::npos);
    snn_backward_cache *b = nullptr;
    CHECK_STATUS(snn_preallocate_grads(m.get(), 600, &b), SNN_ERR_UNSUPPORTED);
    Forward ok = make_forward(m.get(), 2);
    CHECK(ok.get() != nullptr);
}

// Convolutions run at every batch up to a max_batch beyond the batches
// asked one by one at preallocation (cuda/conv.cu), forward and backward,
// and agree with the CPU at a few of them.
void conv_every_batch() {
    const char *spec = "input 7x7x3; conv 1x1 8 relu; conv 3x3 8 pad=1; conv 3x3 4 stride=2; flatten; dense 5";
    const int64_t max_batch = 400;
    Model gpu = make_model(spec, 8);
    const std::vector<float> params = parameters(gpu.get());
    move_to(gpu.get(), 0);
    const auto start = std::chrono::steady_clock::now();
    Forward f = make_forward(gpu.get(), max_batch);
    Backward b = make_backward(gpu.get(), max_batch);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("preallocating the conv caches at max_batch %lld: %.1f ms\n", (long long)max_batch, ms);
    Model cpu = cpu_copy(spec, params, {});
    Forward cf = make_forward(cpu.get(), max_batch);
    Random rnd(31);
    const size_t in = input_size(gpu.get()), out = output_size(gpu.get());
    const std::vector<float> x = rnd.floats(size_t(max_batch) * in, -1.0f, 1.0f);
    const std::vector<float> t = rnd.floats(size_t(max_batch) * out, -1.0f, 1.0f);
    int failed = 0;
    for (int64_t n = 1; n <= max_batch; ++n) {
        CHECK_OK(snn_cache_set_batch(f.get(), n));
        CHECK_OK(snn_set_inputs(f.get(), x.data(), size_t(n) * in));
        CHECK_OK(snn_set_targets(b.get(), t.data(), size_t(n) * out));
        snn_status st = snn_forward(f.get(), gpu.get());
        if (st == SNN_OK) st = snn_backprop(b.get(), f.get(), gpu.get(), SNN_LOSS_MSE, nullptr);
        if (st != SNN_OK && failed++ < 5)
            std::fprintf(stderr, "batch %lld: %s\n", (long long)n, snn_last_error());
        if (n % 97 == 0 || n == max_batch) {
            CHECK_OK(snn_cache_set_batch(cf.get(), n));
            CHECK_OK(snn_set_inputs(cf.get(), x.data(), size_t(n) * in));
            CHECK_OK(snn_forward(cf.get(), cpu.get()));
            const std::string what = "conv outputs at batch " + std::to_string(n);
            close(what.c_str(), outputs_of(f.get(), size_t(n) * out),
                  outputs_of(cf.get(), size_t(n) * out), 1e-4f, 1e-5f);
        }
    }
    CHECK(failed == 0);
}

}  // namespace

int main() {
    if (gpu_as_cpu()) {
        std::printf("skipped: these checks need CUDA streams and device pointers\n");
        return 77;
    }
    test_device();
    write_after_queued_forward(Write::parameters, "snn_set_parameters after a queued forward");
    write_after_queued_forward(Write::state, "snn_set_state after a queued forward");
    write_after_queued_forward(Write::init, "snn_model_init after a queued forward");
    write_after_queued_forward(Write::step, "snn_optimiser_step after another cache's queued forward");
    set_gradients_after_queued_step();
    reset_after_queued_step();
    inputs_device_after_default_stream(cudaStreamLegacy, "snn_set_inputs_device after the legacy default stream");
    inputs_device_after_default_stream(cudaStreamPerThread,
                                       "snn_set_inputs_device after the per-thread default stream");
    current_device_kept();
    cudnn_element_limit();
    conv_every_batch();
    return finish("test_gpu_streams");
}

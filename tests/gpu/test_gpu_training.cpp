// A short training run of the Fashion-MNIST network on the GPU, from a data
// set on the GPU, on random images: the loss falls, and the first loss
// equals the CPU's. Each image is noise plus a brighter band of rows whose
// position is its class, so there is something to learn. Then steps at
// sizes that take every kernel path (batch 257, 64 channels on odd image
// sizes, 1000 outputs) follow the CPU's steps element by element.
#include "gpu_test.h"

using namespace gpu_test;

namespace {

// Five steps of SGD with momentum at batch 257, gathered from a data set on
// the device, through convolutions of 64 channels in and out on odd image
// sizes and a dense layer of 1000 outputs: every step's loss, and the
// parameters after the last, equal the CPU's taking the same steps. Smooth
// activations (no ReLU kink or pooling tie that a rounding could flip), so
// the runs stay together to rounding.
void wide_steps_follow_the_cpu(int32_t device) {
    const char *spec =
        "input 11x9x3; conv 3x3 64 tanh pad=1; conv 3x3 64 tanh stride=2; flatten; "
        "dense 1000 tanh; dense 10";
    const size_t samples = 600, features = 11 * 9 * 3;
    const int64_t batch = 257;
    Random rng(77);
    std::vector<float> images = rng.floats(samples * features, -1.0f, 1.0f);
    std::vector<int32_t> labels = rng.labels(samples, 10);

    Model gpu = make_model(spec, 3);
    Model cpu = make_model(spec, 3);
    move_to(gpu.get(), device);
    snn_dataset *raw = nullptr;
    CHECK_OK(snn_dataset_create(device, images.data(), samples, features, labels.data(), &raw));
    Dataset ds(raw);
    if (!ds) return;

    snn_model *models[2] = {cpu.get(), gpu.get()};
    Forward fs[2] = {make_forward(cpu.get(), batch), make_forward(gpu.get(), batch)};
    Backward bs[2] = {make_backward(cpu.get(), batch), make_backward(gpu.get(), batch)};
    Optimiser os[2] = {make_optimiser(cpu.get(), SNN_OPTIMISER_SGD),
                       make_optimiser(gpu.get(), SNN_OPTIMISER_SGD)};
    for (Optimiser &o : os) {
        CHECK_OK(snn_optimiser_set(o.get(), SNN_HP_LEARNING_RATE, 0.05));
        CHECK_OK(snn_optimiser_set(o.get(), SNN_HP_MOMENTUM, 0.9));
    }
    for (int step = 0; step < 5; ++step) {
        std::vector<int64_t> idx(static_cast<size_t>(batch));
        for (size_t i = 0; i < idx.size(); ++i)
            idx[i] = int64_t((i * 7 + size_t(step) * 131) % samples);
        CHECK_OK(snn_set_inputs_gather(fs[0].get(), images.data(), samples, idx.data(), idx.size()));
        CHECK_OK(snn_set_labels_gather(bs[0].get(), labels.data(), samples, idx.data(), idx.size()));
        CHECK_OK(snn_set_inputs_from_dataset(fs[1].get(), ds.get(), idx.data(), idx.size()));
        CHECK_OK(snn_set_labels_from_dataset(bs[1].get(), ds.get(), idx.data(), idx.size()));
        float loss[2] = {0.0f, 0.0f};
        for (int side = 0; side < 2; ++side) {
            CHECK_OK(snn_forward(fs[side].get(), models[side]));
            CHECK_OK(snn_backprop(bs[side].get(), fs[side].get(), models[side],
                                  SNN_LOSS_LOGIT_CROSSENTROPY, &loss[side]));
            CHECK_OK(snn_optimiser_step(os[side].get(), models[side], bs[side].get()));
        }
        close(("loss of wide step " + std::to_string(step)).c_str(), loss[1], loss[0], 1e-4f, 1e-6f);
    }
    close("parameters after five wide steps", parameters(gpu.get()), parameters(cpu.get()), 1e-4f,
          1e-6f);
}

}  // namespace

int main() {
    const int32_t device = test_device();
    const char *spec =
        "input 28x28x1; conv 5x5 16 relu; maxpool 2; conv 3x3 8 relu; maxpool 4; flatten; dense 10";
    const size_t samples = 256, features = 28 * 28;
    const int64_t batch = 64;
    Random rng(2024);
    std::vector<float> images = rng.floats(samples * features, 0.0f, 1.0f);
    std::vector<int32_t> labels = rng.labels(samples, 10);
    for (size_t i = 0; i < samples; ++i)
        for (size_t row = 4 + 2 * size_t(labels[i]); row < 6 + 2 * size_t(labels[i]); ++row)
            for (size_t col = 0; col < 28; ++col) images[i * features + row * 28 + col] += 1.0f;

    Model gpu = make_model(spec, 1);
    Model cpu = make_model(spec, 1);
    move_to(gpu.get(), device);
    snn_dataset *raw = nullptr;
    CHECK_OK(snn_dataset_create(device, images.data(), samples, features, labels.data(), &raw));
    Dataset ds(raw);
    if (!ds) return finish("gpu training");

    Forward f = make_forward(gpu.get(), batch);
    Backward b = make_backward(gpu.get(), batch);
    Optimiser o = make_optimiser(gpu.get(), SNN_OPTIMISER_ADAM);
    CHECK_OK(snn_optimiser_set(o.get(), SNN_HP_LEARNING_RATE, 3e-3));

    // Four fixed batches, visited in turn: 100 steps is 25 epochs of them.
    std::vector<int64_t> order(samples);
    for (size_t i = 0; i < samples; ++i) order[i] = int64_t((i * 97) % samples);
    float first = 0.0f, last = 0.0f;
    for (int step = 0; step < 100; ++step) {
        const int64_t *idx = order.data() + (step % 4) * batch;
        CHECK_OK(snn_set_inputs_from_dataset(f.get(), ds.get(), idx, size_t(batch)));
        CHECK_OK(snn_set_labels_from_dataset(b.get(), ds.get(), idx, size_t(batch)));
        CHECK_OK(snn_forward(f.get(), gpu.get()));
        float loss = 0.0f;
        // Reading the loss back costs a synchronisation; only some steps do.
        const bool read = step == 0 || step >= 96;
        CHECK_OK(snn_backprop(b.get(), f.get(), gpu.get(), SNN_LOSS_LOGIT_CROSSENTROPY,
                              read ? &loss : nullptr));
        CHECK_OK(snn_optimiser_step(o.get(), gpu.get(), b.get()));
        if (step == 0) first = loss;
        if (step >= 96) last += loss / 4.0f;
    }
    std::printf("loss: first batch %.4f, last four batches %.4f\n", first, last);
    CHECK(std::isfinite(first) && std::isfinite(last));
    CHECK(last < 0.7f * first);

    // The first loss on the CPU, from the same parameters and batch.
    Forward cf = make_forward(cpu.get(), batch);
    Backward cb = make_backward(cpu.get(), batch);
    CHECK_OK(snn_set_inputs_gather(cf.get(), images.data(), samples, order.data(), size_t(batch)));
    CHECK_OK(snn_set_labels_gather(cb.get(), labels.data(), samples, order.data(), size_t(batch)));
    CHECK_OK(snn_forward(cf.get(), cpu.get()));
    float cpu_first = 0.0f;
    CHECK_OK(snn_backprop(cb.get(), cf.get(), cpu.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &cpu_first));
    close("first loss against the CPU", first, cpu_first, 1e-4f, 1e-6f);

    wide_steps_follow_the_cpu(device);
    return finish("gpu training");
}

// Moving models between the CPU and a GPU, handles that belong to the old
// device, and batches gathered from a data set that lives on the GPU.
#include "gpu_test.h"

using namespace gpu_test;

namespace {

const char *kSpec = "input 6x6x2; conv 3x3 3 relu; flatten; dense 5 tanh; dense 3";

// Parameters survive both moves bit for bit, and can be set on the GPU.
void moves_keep_parameters(int32_t device) {
    Model m = make_model(kSpec, 21);
    std::vector<float> before = parameters(m.get());
    move_to(m.get(), device);
    int32_t where = -2;
    CHECK_OK(snn_model_device(m.get(), &where));
    CHECK(where == device);
    CHECK(parameters(m.get()) == before);
    // Moving to the device it is on does nothing.
    move_to(m.get(), device);
    CHECK(parameters(m.get()) == before);

    std::vector<float> changed = Random(5).floats(before.size(), -2.0f, 2.0f);
    CHECK_OK(snn_set_parameters(m.get(), changed.data(), changed.size()));
    CHECK(parameters(m.get()) == changed);
    CHECK_OK(snn_to_cpu(m.get()));
    CHECK_OK(snn_model_device(m.get(), &where));
    CHECK(where == SNN_DEVICE_CPU);
    CHECK(parameters(m.get()) == changed);
}

// Zero-copy views exist only on the CPU.
void views_are_cpu_only(int32_t device) {
    if (device == SNN_DEVICE_CPU) return;
    Model m = make_model(kSpec, 1);
    move_to(m.get(), device);
    float *data = nullptr;
    size_t count = 0;
    CHECK_STATUS(snn_parameters(m.get(), &data, &count), SNN_ERR_DEVICE_MISMATCH);
    CHECK(data == nullptr);
    Forward f = make_forward(m.get(), 2);
    std::vector<float> x(2 * input_size(m.get()), 0.5f);
    CHECK_OK(snn_set_inputs(f.get(), x.data(), x.size()));
    CHECK_OK(snn_forward(f.get(), m.get()));
    const float *out = nullptr;
    CHECK_STATUS(snn_outputs(f.get(), &out, &count), SNN_ERR_DEVICE_MISMATCH);
    // Inputs from device memory need a GPU cache.
    Model cpu = make_model(kSpec, 1);
    Forward cpu_f = make_forward(cpu.get(), 2);
    CHECK_STATUS(snn_set_inputs_device(cpu_f.get(), x.data(), x.size()), SNN_ERR_DEVICE_MISMATCH);
}

// Caches and optimisers made before a move belong to the old device.
void handles_of_the_old_device_follow_the_model(int32_t device) {
    if (device == SNN_DEVICE_CPU) return;
    Model m = make_model(kSpec, 2);
    Forward f = make_forward(m.get(), 4);
    Backward b = make_backward(m.get(), 4);
    Optimiser o = make_optimiser(m.get(), SNN_OPTIMISER_ADAM);
    std::vector<float> x(4 * input_size(m.get()), 0.25f);
    std::vector<int32_t> labels = {0, 1, 2, 0};
    CHECK_OK(snn_set_inputs(f.get(), x.data(), x.size()));
    CHECK_OK(snn_forward(f.get(), m.get()));
    CHECK_OK(snn_set_labels(b.get(), labels.data(), labels.size()));
    CHECK_OK(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, nullptr));

    move_to(m.get(), device);
    // The handles of the old device follow the model: the step they make
    // equals one made by a fresh optimiser's first step from the same state.
    CHECK_OK(snn_forward(f.get(), m.get()));
    CHECK_OK(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, nullptr));
    CHECK_OK(snn_optimiser_step(o.get(), m.get(), b.get()));
    int64_t steps = 0;
    CHECK_OK(snn_optimiser_step_count(o.get(), &steps));
    CHECK(steps == 1);

    // GPU handles follow the model back to the CPU, and give the CPU's outputs.
    Forward gf = make_forward(m.get(), 4);
    CHECK_OK(snn_set_inputs(gf.get(), x.data(), x.size()));
    CHECK_OK(snn_to_cpu(m.get()));
    CHECK_OK(snn_forward(gf.get(), m.get()));
    CHECK_OK(snn_forward(f.get(), m.get()));
    const float *a = nullptr, *c = nullptr;
    size_t na = 0, nc = 0;
    CHECK_OK(snn_outputs(gf.get(), &a, &na));
    CHECK_OK(snn_outputs(f.get(), &c, &nc));
    CHECK(na == nc && na > 0 && a && c && std::memcmp(a, c, na * sizeof(float)) == 0);

    // An index past the visible GPUs.
    CHECK_STATUS(snn_to_gpu(m.get(), snn_gpu_count()), SNN_ERR_GPU_INDEX);
    int32_t where = -2;
    CHECK_OK(snn_model_device(m.get(), &where));
    CHECK(where == SNN_DEVICE_CPU);
}

// Batches gathered on the GPU from a GPU data set equal those gathered on
// the CPU from host arrays: the same outputs, loss and gradients. n covers
// more indices than one gather chunk of the plugin.
void dataset_gather_matches_host_gather(int32_t device) {
    const size_t samples = 12000, n = 9000;
    const char *spec = "input 4; dense 6 relu; dense 3";
    Model cpu = make_model(spec, 8);
    Model gpu = make_model(spec, 8);
    move_to(gpu.get(), device);
    Random rng(77);
    std::vector<float> data = rng.floats(samples * 4, -1.0f, 1.0f);
    std::vector<int32_t> labels = rng.labels(samples, 3);
    std::vector<int64_t> idx(n);
    for (size_t i = 0; i < n; ++i) idx[i] = int64_t(rng.next() % samples);

    snn_dataset *raw = nullptr;
    CHECK_OK(snn_dataset_create(device, data.data(), samples, 4, labels.data(), &raw));
    Dataset ds(raw);
    if (!ds) return;

    Forward cf = make_forward(cpu.get(), int64_t(n)), gf = make_forward(gpu.get(), int64_t(n));
    Backward cb = make_backward(cpu.get(), int64_t(n)), gb = make_backward(gpu.get(), int64_t(n));
    CHECK_OK(snn_set_inputs_gather(cf.get(), data.data(), samples, idx.data(), n));
    CHECK_OK(snn_set_labels_gather(cb.get(), labels.data(), samples, idx.data(), n));
    CHECK_OK(snn_set_inputs_from_dataset(gf.get(), ds.get(), idx.data(), n));
    CHECK_OK(snn_set_labels_from_dataset(gb.get(), ds.get(), idx.data(), n));
    CHECK_OK(snn_forward(cf.get(), cpu.get()));
    CHECK_OK(snn_forward(gf.get(), gpu.get()));
    std::vector<float> cy(n * 3), gy(n * 3);
    CHECK_OK(snn_get_outputs(cf.get(), cy.data(), cy.size()));
    CHECK_OK(snn_get_outputs(gf.get(), gy.data(), gy.size()));
    close("outputs of a gathered batch", gy, cy, 1e-5f, 1e-7f);

    float cl = 0.0f, gl = 0.0f;
    CHECK_OK(snn_backprop(cb.get(), cf.get(), cpu.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &cl));
    CHECK_OK(snn_backprop(gb.get(), gf.get(), gpu.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &gl));
    close("loss of a gathered batch", gl, cl, 1e-5f, 1e-7f);
    std::vector<float> cg(param_count(cpu.get())), gg(cg.size());
    CHECK_OK(snn_get_gradients(cb.get(), cg.data(), cg.size()));
    CHECK_OK(snn_get_gradients(gb.get(), gg.data(), gg.size()));
    close("gradients of a gathered batch", gg, cg, 1e-3f, 1e-7f);

    // A data set on another device than the cache.
    if (device != SNN_DEVICE_CPU) {
        CHECK_STATUS(snn_set_inputs_from_dataset(cf.get(), ds.get(), idx.data(), 4),
                     SNN_ERR_DEVICE_MISMATCH);
        CHECK_STATUS(snn_set_labels_from_dataset(cb.get(), ds.get(), idx.data(), 4),
                     SNN_ERR_DEVICE_MISMATCH);
    }
}

// A model saved from the GPU loads on the CPU with the same parameters.
void save_from_gpu(int32_t device) {
    Model m = make_model(kSpec, 4);
    move_to(m.get(), device);
    size_t size = 0;
    CHECK_OK(snn_model_save_to_buffer(m.get(), nullptr, 0, &size));
    std::vector<unsigned char> buf(size);
    CHECK_OK(snn_model_save_to_buffer(m.get(), buf.data(), buf.size(), &size));
    snn_model *raw = nullptr;
    CHECK_OK(snn_model_load_from_buffer(buf.data(), buf.size(), &raw));
    Model loaded(raw);
    if (loaded) CHECK(parameters(loaded.get()) == parameters(m.get()));
}

}  // namespace

int main() {
    const int32_t device = test_device();
    moves_keep_parameters(device);
    views_are_cpu_only(device);
    handles_of_the_old_device_follow_the_model(device);
    dataset_gather_matches_host_gather(device);
    save_from_gpu(device);
    return finish("gpu devices");
}

// Handles follow their model between devices: caches and optimisers made on
// one device keep working after snn_to_gpu / snn_to_cpu, carrying what they
// hold, so training interrupted by a move (or by a checkpoint taken on a GPU
// and loaded on the CPU) continues bit for bit as an uninterrupted run on the
// same device.
#include <cstdio>
#include <string>

#include <unistd.h>

#include "gpu_test.h"

using namespace gpu_test;

namespace {

const char *kMlp = "input 12; dense 16 tanh; dense 8 relu; dense 3";
const char *kCnn = "input 8x8x2; conv 3x3 4 relu; maxpool 2; flatten; dense 3";
const int64_t kBatch = 6;

// One model with its handles, trained on batches drawn from a fixed seed.
struct Run {
    Model model;
    Forward fwd;
    Backward bwd;
    Optimiser opt;
    Random data{123};
    int64_t step = 0;

    explicit Run(const char *spec) : model(make_model(spec, 5)) { make_handles(); }
    Run(Model m, Optimiser o) : model(std::move(m)), opt(std::move(o)) {
        fwd = make_forward(model.get(), kBatch);
        bwd = make_backward(model.get(), kBatch);
    }
    void make_handles() {
        fwd = make_forward(model.get(), kBatch);
        bwd = make_backward(model.get(), kBatch);
        opt = make_optimiser(model.get(), SNN_OPTIMISER_ADAM);
        CHECK_OK(snn_optimiser_set(opt.get(), SNN_HP_LEARNING_RATE, 0.01));
    }
    // Batch number `step` of the data stream, whatever the run did before.
    void train(int steps) {
        const size_t features = input_size(model.get());
        for (int i = 0; i < steps; ++i, ++step) {
            Random r(1000 + uint64_t(step));
            std::vector<float> x = r.floats(size_t(kBatch) * features, -2.0f, 2.0f);
            std::vector<int32_t> y = r.labels(size_t(kBatch), 3);
            CHECK_OK(snn_set_inputs(fwd.get(), x.data(), x.size()));
            CHECK_OK(snn_forward(fwd.get(), model.get()));
            CHECK_OK(snn_set_labels(bwd.get(), y.data(), y.size()));
            CHECK_OK(snn_backprop(bwd.get(), fwd.get(), model.get(), SNN_LOSS_LOGIT_CROSSENTROPY, nullptr));
            CHECK_OK(snn_optimiser_step(opt.get(), model.get(), bwd.get()));
        }
    }
    int64_t optimiser_steps() {
        int64_t n = -1;
        CHECK_OK(snn_optimiser_step_count(opt.get(), &n));
        return n;
    }
};

std::string temp_path(const char *name) {
    const char *dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/snn-follow-" + std::to_string(getpid()) + "-" + name;
}

bool same_bits(const char *what, const std::vector<float> &a, const std::vector<float> &b) {
    if (a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0) return true;
    size_t i = 0;
    while (i < a.size() && i < b.size() && std::memcmp(&a[i], &b[i], sizeof(float)) == 0) ++i;
    std::fprintf(stderr, "%s: differs at element %zu (%.9g vs %.9g)\n", what, i,
                 i < a.size() ? a[i] : 0.0f, i < b.size() ? b[i] : 0.0f);
    ++failures();
    return false;
}

// Touches every handle on the model's current device without training:
// a forward pass and backprop (the caches follow) and a checkpoint save
// (the optimiser follows).
void use_handles_here(Run &r, const std::string &checkpoint) {
    const size_t features = input_size(r.model.get());
    std::vector<float> x(size_t(kBatch) * features, 0.5f);
    std::vector<int32_t> y(size_t(kBatch), 1);
    CHECK_OK(snn_set_inputs(r.fwd.get(), x.data(), x.size()));
    CHECK_OK(snn_forward(r.fwd.get(), r.model.get()));
    CHECK_OK(snn_set_labels(r.bwd.get(), y.data(), y.size()));
    CHECK_OK(snn_backprop(r.bwd.get(), r.fwd.get(), r.model.get(), SNN_LOSS_LOGIT_CROSSENTROPY, nullptr));
    CHECK_OK(snn_checkpoint_save(r.model.get(), r.opt.get(), checkpoint.c_str()));
}

// Trains on `home`, visits `away` with every handle, comes back and goes on:
// bit for bit the run that never left `home`.
void round_trip_resumes_exactly(const char *spec, int32_t home, int32_t away) {
    Run straight(spec), moved(spec);
    move_to(straight.model.get(), home);
    move_to(moved.model.get(), home);
    straight.make_handles();
    moved.make_handles();
    straight.train(10);
    moved.train(5);
    move_to(moved.model.get(), away);
    use_handles_here(moved, temp_path("round-trip.safetensors"));
    std::remove(temp_path("round-trip.safetensors").c_str());
    move_to(moved.model.get(), home);
    moved.train(5);
    same_bits("parameters after a round trip", parameters(moved.model.get()), parameters(straight.model.get()));
    CHECK(moved.optimiser_steps() == 10);
}

// A checkpoint taken on the GPU loads on the CPU; moved back to the GPU, the
// loaded optimiser follows and training continues bit for bit.
void gpu_checkpoint_resumes_on_the_gpu(const char *spec, int32_t device) {
    Run straight(spec), first(spec);
    move_to(straight.model.get(), device);
    move_to(first.model.get(), device);
    straight.make_handles();
    first.make_handles();
    straight.train(10);
    first.train(5);
    const std::string path = temp_path("checkpoint.safetensors");
    CHECK_OK(snn_checkpoint_save(first.model.get(), first.opt.get(), path.c_str()));
    snn_model *m = nullptr;
    snn_optimiser *o = nullptr;
    CHECK_OK(snn_checkpoint_load(path.c_str(), &m, &o));
    std::remove(path.c_str());
    if (!m || !o) return;
    int32_t where = -2;
    CHECK_OK(snn_model_device(m, &where));
    CHECK(where == SNN_DEVICE_CPU);
    move_to(m, device);
    Run resumed{Model(m), Optimiser(o)};
    resumed.step = 5;
    resumed.train(5);
    same_bits("parameters resumed from a GPU checkpoint", parameters(resumed.model.get()),
              parameters(straight.model.get()));
    CHECK(resumed.optimiser_steps() == 10);
}

// Inputs and labels set before a move are kept by the handles that follow.
void contents_follow_the_model(int32_t device) {
    Model a = make_model(kCnn, 9), b = make_model(kCnn, 9);
    Random r(31);
    std::vector<float> x = r.floats(size_t(kBatch) * input_size(a.get()), -1.0f, 1.0f);
    std::vector<int32_t> y = r.labels(size_t(kBatch), 3);
    Forward fa = make_forward(a.get(), kBatch);
    Backward ba = make_backward(a.get(), kBatch);
    CHECK_OK(snn_set_inputs(fa.get(), x.data(), x.size()));
    CHECK_OK(snn_set_labels(ba.get(), y.data(), y.size()));
    move_to(a.get(), device);  // after the inputs and labels were set
    CHECK_OK(snn_forward(fa.get(), a.get()));
    float la = 0.0f, lb = 0.0f;
    CHECK_OK(snn_backprop(ba.get(), fa.get(), a.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &la));

    move_to(b.get(), device);  // the reference: handles made on the device
    Forward fb = make_forward(b.get(), kBatch);
    Backward bb = make_backward(b.get(), kBatch);
    CHECK_OK(snn_set_inputs(fb.get(), x.data(), x.size()));
    CHECK_OK(snn_set_labels(bb.get(), y.data(), y.size()));
    CHECK_OK(snn_forward(fb.get(), b.get()));
    CHECK_OK(snn_backprop(bb.get(), fb.get(), b.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &lb));
    std::vector<float> oa(size_t(kBatch) * 3), ob(oa.size());
    CHECK_OK(snn_get_outputs(fa.get(), oa.data(), oa.size()));
    CHECK_OK(snn_get_outputs(fb.get(), ob.data(), ob.size()));
    same_bits("outputs of inputs set before the move", oa, ob);
    CHECK(std::memcmp(&la, &lb, sizeof la) == 0);
    std::vector<float> ga(param_count(a.get())), gb(ga.size());
    CHECK_OK(snn_get_gradients(ba.get(), ga.data(), ga.size()));
    CHECK_OK(snn_get_gradients(bb.get(), gb.data(), gb.size()));
    same_bits("gradients of labels set before the move", ga, gb);

    // The outputs computed on the device come back with the cache.
    CHECK_OK(snn_to_cpu(a.get()));
    CHECK_OK(snn_forward(fa.get(), a.get()));
    const float *view = nullptr;
    size_t n = 0;
    CHECK_OK(snn_outputs(fa.get(), &view, &n));
    CHECK(n == oa.size());
}

}  // namespace

int main() {
    const int32_t device = test_device();
    for (const char *spec : {kMlp, kCnn}) {
        round_trip_resumes_exactly(spec, SNN_DEVICE_CPU, device);
        round_trip_resumes_exactly(spec, device, SNN_DEVICE_CPU);
        gpu_checkpoint_resumes_on_the_gpu(spec, device);
    }
    contents_follow_the_model(device);
    return finish("gpu follow");
}

// bf16 and fp16 training on the GPU against float32 on the same GPU, from
// the same parameters: the default CNN and a sequence model (conv1d, lstm,
// gru, attention, dense: every op with products), 100 and 60 Adam steps.
// fp16 runs with dynamic loss scaling (scale 1024 growing every 20 good
// steps, so the run grows it and may back off). Tolerances, with u the unit
// roundoff (2^-8 bf16, 2^-11 fp16):
//   first step's loss          |L - L32| <= 16 u |L32|
//   first step's gradients     ||g - g32|| <= 32 u ||g32||  (normwise, through
//                              every layer back to the first)
//   after training             the loss falls below 0.7 of the first, and the
//                              mean of the last four losses is within 0.15 of
//                              float32's (cross-entropy in nats)
// Then fp16 with a forced overflow (scale 1e38): the step is skipped, the
// scale halves and the parameters and the optimiser's step count stay.
// bf16 needs compute capability 8.0: below, its runs are skipped, saying so.
#include <cmath>

#include "gpu_test.h"

using namespace gpu_test;

namespace {

struct Data {
    const char *spec;
    std::vector<float> inputs;
    std::vector<int32_t> labels;
    int64_t batch;
    int steps;
};

// Images of noise plus a brighter band of rows at the label's position
// (test_gpu_training's data).
Data images() {
    Data d{"input 28x28x1; conv 5x5 16 relu; maxpool 2; conv 3x3 8 relu; maxpool 4; flatten; dense 10", {}, {},
           64, 100};
    const size_t samples = 256, features = 28 * 28;
    Random rng(2024);
    d.inputs = rng.floats(samples * features, 0.0f, 1.0f);
    d.labels = rng.labels(samples, 10);
    for (size_t i = 0; i < samples; ++i)
        for (size_t row = 4 + 2 * size_t(d.labels[i]); row < 6 + 2 * size_t(d.labels[i]); ++row)
            for (size_t col = 0; col < 28; ++col) d.inputs[i * features + row * 28 + col] += 1.0f;
    return d;
}

// Sequences of noise with the label's feature raised over the second half
// of the steps.
Data sequences() {
    Data d{"input seq 10x6; conv1d 3 8 relu pad=1; lstm 16; gru 8 bidirectional; attention heads=2 causal; "
           "seqpool mean; dense 4",
           {}, {}, 32, 60};
    const size_t samples = 128, steps = 10, features = 6;
    Random rng(7);
    d.inputs = rng.floats(samples * steps * features, -1.0f, 1.0f);
    d.labels = rng.labels(samples, 4);
    for (size_t i = 0; i < samples; ++i)
        for (size_t t = steps / 2; t < steps; ++t) d.inputs[(i * steps + t) * features + size_t(d.labels[i])] += 1.5f;
    return d;
}

struct Run {
    float first_loss = 0.0f, last_loss = 0.0f;
    std::vector<float> first_grads;
    double scale = 0.0;
};

const char *name_of(snn_precision p) {
    return p == SNN_PRECISION_FLOAT32 ? "float32" : p == SNN_PRECISION_BF16 ? "bf16" : "fp16";
}

double unit_roundoff(snn_precision p) { return p == SNN_PRECISION_FP16 ? 0x1p-11 : 0x1p-8; }

// Adam over the data's batches in turn, at precision p on GPU `device`.
Run train(const Data &d, snn_precision p, int32_t device) {
    Model m = make_model(d.spec, 5);
    move_to(m.get(), device);
    Forward f = make_forward(m.get(), d.batch);
    Backward b = make_backward(m.get(), d.batch);
    CHECK_OK(snn_cache_set_precision(f.get(), p));
    if (p == SNN_PRECISION_FP16) CHECK_OK(snn_set_loss_scaling_state(b.get(), 1024.0, 2.0, 0.5, 20, 0));
    Optimiser o = make_optimiser(m.get(), SNN_OPTIMISER_ADAM);
    CHECK_OK(snn_optimiser_set(o.get(), SNN_HP_LEARNING_RATE, 3e-3));
    const size_t features = input_size(m.get()), batches = d.labels.size() / size_t(d.batch);
    Run r;
    for (int step = 0; step < d.steps; ++step) {
        const size_t first = (size_t(step) % batches) * size_t(d.batch);
        CHECK_OK(snn_set_inputs(f.get(), d.inputs.data() + first * features, size_t(d.batch) * features));
        CHECK_OK(snn_set_labels(b.get(), d.labels.data() + first, size_t(d.batch)));
        CHECK_OK(snn_forward(f.get(), m.get()));
        float loss = 0.0f;
        CHECK_OK(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &loss));
        if (step == 0) {
            r.first_loss = loss;
            r.first_grads = gradients_of(b.get(), param_count(m.get()));
        }
        if (step >= d.steps - 4) r.last_loss += loss / 4.0f;
        CHECK_OK(snn_optimiser_step(o.get(), m.get(), b.get()));
    }
    CHECK_OK(snn_loss_scaling_state(b.get(), nullptr, &r.scale, nullptr, nullptr, nullptr, nullptr, nullptr));
    return r;
}

double normwise(const std::vector<float> &a, const std::vector<float> &b) {
    double diff = 0.0, norm = 0.0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
        norm += double(b[i]) * b[i];
    }
    return a.size() == b.size() ? std::sqrt(diff / norm) : INFINITY;
}

void compare(const char *what, const Data &d, snn_precision p, const Run &r32, int32_t device) {
    const Run r = train(d, p, device);
    const double u = unit_roundoff(p), grads = normwise(r.first_grads, r32.first_grads);
    std::printf("%s at %s: first loss %.5f (float32 %.5f), last %.4f (float32 %.4f), first gradients off by "
                "%.2g normwise (%.1f u), loss scale at the end %g\n",
                what, name_of(p), r.first_loss, r32.first_loss, r.last_loss, r32.last_loss, grads, grads / u,
                r.scale);
    CHECK(std::fabs(r.first_loss - r32.first_loss) <= 16.0 * u * std::fabs(r32.first_loss));
    CHECK(grads <= 32.0 * u);
    CHECK(std::isfinite(r.last_loss) && r.last_loss < 0.7f * r.first_loss);
    CHECK(std::fabs(r.last_loss - r32.last_loss) <= 0.15f);
}

// fp16 with the scale at 1e38: the scaled gradients overflow fp16, the step
// is skipped and the scale halves.
void forced_overflow(const Data &d, int32_t device) {
    Model m = make_model(d.spec, 5);
    move_to(m.get(), device);
    Forward f = make_forward(m.get(), d.batch);
    Backward b = make_backward(m.get(), d.batch);
    CHECK_OK(snn_cache_set_precision(f.get(), SNN_PRECISION_FP16));
    CHECK_OK(snn_set_loss_scaling_state(b.get(), 1e38, 2.0, 0.5, 2000, 0));
    Optimiser o = make_optimiser(m.get(), SNN_OPTIMISER_ADAM);
    const std::vector<float> before = parameters(m.get());
    const size_t features = input_size(m.get());
    CHECK_OK(snn_set_inputs(f.get(), d.inputs.data(), size_t(d.batch) * features));
    CHECK_OK(snn_set_labels(b.get(), d.labels.data(), size_t(d.batch)));
    CHECK_OK(snn_forward(f.get(), m.get()));
    float loss = 0.0f;
    CHECK_OK(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &loss));
    double scale = 0.0;
    int32_t skipped = 0;
    CHECK_OK(snn_loss_scaling_state(b.get(), nullptr, &scale, nullptr, nullptr, nullptr, nullptr, &skipped));
    std::printf("fp16 at scale 1e38: loss %.4f, skipped %d, scale now %g\n", loss, skipped, scale);
    CHECK(std::isfinite(loss));
    CHECK(skipped == 1);
    CHECK(scale == 0.5e38);
    CHECK_OK(snn_optimiser_step(o.get(), m.get(), b.get()));
    CHECK(parameters(m.get()) == before);
    int64_t steps = -1;
    CHECK_OK(snn_optimiser_step_count(o.get(), &steps));
    CHECK(steps == 0);
}

}  // namespace

int main() {
    gpu_skip_unless_gpu();
    const int32_t device = 0;
    const Data cnn = images(), seq = sequences();
    const Run cnn32 = train(cnn, SNN_PRECISION_FLOAT32, device), seq32 = train(seq, SNN_PRECISION_FLOAT32, device);
    for (snn_precision p : {SNN_PRECISION_BF16, SNN_PRECISION_FP16}) {
        if (snn_precision_support(device, p, nullptr) != SNN_OK) {
            std::printf("%s skipped: %s\n", name_of(p), snn_last_error());
            continue;
        }
        compare("default CNN", cnn, p, cnn32, device);
        compare("sequence model", seq, p, seq32, device);
    }
    forced_overflow(cnn, device);
    return finish("gpu bf16 and fp16 training");
}

// Sequence models on the GPU against the CPU backend: token ids and float
// sequences with per-sample lengths, labels per step or per sample, every
// sequence op (embedding, posembed, lstm, gru, attention, conv1d, seqpool,
// and dense, layernorm and softmax on the last axis), in both modes, with
// Adam steps between the passes; the token data set gathered on the device
// against tokens set from the host; and a cache with lengths set following
// its model to the GPU.
#include "gpu_test.h"

using namespace gpu_test;

namespace {

constexpr float kOutRtol = 1e-4f, kOutAtol = 2e-5f, kGradRtol = 2e-3f, kGradAtol = 2e-5f;

struct Case {
    const char *what;
    const char *spec;
    int64_t batch;
};

const Case kCases[] = {
    {"lstm classifier", "input tokens 9 vocab=13; embedding 6 pad=0; lstm 7 last; dense 4", 5},
    {"bidirectional lstm per step", "input tokens 9 vocab=13; embedding 6; lstm 5 bidirectional; dense 13", 5},
    {"gru, bidirectional, last", "input seq 11x4; gru 6 bidirectional last; dense 3", 4},
    {"gru per step", "input seq 7x4; gru 8; layernorm; dense 5", 6},
    {"causal transformer block",
     "input tokens 10 vocab=17; embedding 8; posembed name=h; layernorm; attention heads=2 causal; add h name=g; "
     "layernorm; dense 16 gelu; dense 8; add g; layernorm; dense 17",
     4},
    {"attention with mean pooling",
     "input seq 8x6; attention heads=3; layernorm; seqpool mean; dense 3", 5},
    {"conv1d and max pooling", "input seq 12x3; conv1d 3 5 relu pad=1; conv1d 5 4 pad=4 dilation=2; seqpool max; dense 3",
     4},
    {"last-step pooling and softmax", "input seq 6x5; dense 6 tanh; softmax; seqpool last; dense 2", 3},
};

// Per-step labels (some -1) or per-sample labels for the model's output.
std::vector<int32_t> make_labels(const snn_model *m, int64_t batch, Random &rng) {
    int64_t layers = 0, c = 0, h = 0, w = 0;
    CHECK_OK(snn_model_layer_count(m, &layers));
    CHECK_OK(snn_model_layer_shape(m, layers - 1, &c, &h, &w));
    const size_t per = output_size(m) / size_t(c);
    std::vector<int32_t> labels(size_t(batch) * per);
    for (size_t i = 0; i < labels.size(); ++i)
        labels[i] = per > 1 && i % 6 == 5 ? -1 : int32_t(rng.uniform(0.0f, float(c) - 0.01f));
    return labels;
}

struct Feed {
    std::vector<int32_t> ids, lengths, labels;
    std::vector<float> x;
};

Feed make_feed(const snn_model *m, int64_t batch, Random &rng) {
    Feed f;
    int64_t steps = 0, vocab = 0;
    CHECK_OK(snn_model_input_sequence(m, &steps, &vocab));
    const size_t in = input_size(m);
    if (vocab) {
        f.ids.resize(size_t(batch) * in);
        for (int32_t &id : f.ids) id = int32_t(rng.uniform(0.0f, float(vocab) - 0.01f));
    } else {
        f.x = rng.floats(size_t(batch) * in, -1.0f, 1.0f);
    }
    for (int64_t i = 0; i < batch; ++i)
        f.lengths.push_back(i == 0 ? int32_t(steps) : i == 1 ? 1 : 1 + int32_t(rng.uniform(0.0f, float(steps) - 0.01f)));
    f.labels = make_labels(m, batch, rng);
    return f;
}

void set_feed(snn_forward_cache *fwd, const Feed &f) {
    if (!f.ids.empty())
        CHECK_OK(snn_set_tokens(fwd, f.ids.data(), f.ids.size()));
    else
        CHECK_OK(snn_set_inputs(fwd, f.x.data(), f.x.size()));
    CHECK_OK(snn_set_lengths(fwd, f.lengths.data(), f.lengths.size()));
}

// Both sides from the same parameters, three passes with an Adam step after
// each, in one mode; everything compared after every pass.
void compare(const Case &c, bool training, int32_t device) {
    Model cpu = make_model(c.spec, 21);
    Model gpu = make_model(c.spec, 21);
    move_to(gpu.get(), device);
    snn_model *models[2] = {cpu.get(), gpu.get()};
    Forward fs[2] = {make_forward(cpu.get(), c.batch), make_forward(gpu.get(), c.batch)};
    Backward bs[2] = {make_backward(cpu.get(), c.batch), make_backward(gpu.get(), c.batch)};
    Optimiser os[2] = {make_optimiser(cpu.get(), SNN_OPTIMISER_ADAM), make_optimiser(gpu.get(), SNN_OPTIMISER_ADAM)};
    Random rng(77);
    const Feed feed = make_feed(cpu.get(), c.batch, rng);
    for (int side = 0; side < 2; ++side) {
        CHECK_OK(snn_cache_set_training(fs[side].get(), training ? 1 : 0));
        CHECK_OK(snn_cache_set_seed(fs[side].get(), 5));
        if (feed.ids.empty()) CHECK_OK(snn_set_input_gradient(bs[side].get(), 1));
        CHECK_OK(snn_set_labels(bs[side].get(), feed.labels.data(), feed.labels.size()));
    }
    const size_t out = output_size(cpu.get()), params = param_count(cpu.get());
    for (int pass = 0; pass < 3; ++pass) {
        const std::string label =
            std::string(c.what) + (training ? ", training" : ", inference") + ", pass " + std::to_string(pass);
        std::vector<float> y[2], g[2], dx[2];
        float loss[2] = {0.0f, 0.0f};
        for (int side = 0; side < 2; ++side) {
            set_feed(fs[side].get(), feed);
            CHECK_OK(snn_forward(fs[side].get(), models[side]));
            y[side] = outputs_of(fs[side].get(), size_t(c.batch) * out);
            CHECK_OK(snn_backprop(bs[side].get(), fs[side].get(), models[side], SNN_LOSS_LOGIT_CROSSENTROPY,
                                  &loss[side]));
            g[side] = gradients_of(bs[side].get(), params);
            if (feed.ids.empty()) {
                dx[side].resize(feed.x.size());
                CHECK_OK(snn_get_input_gradients(bs[side].get(), dx[side].data(), dx[side].size()));
            }
            CHECK_OK(snn_optimiser_step(os[side].get(), models[side], bs[side].get()));
        }
        close((label + ": outputs").c_str(), y[1], y[0], kOutRtol, kOutAtol);
        close((label + ": loss").c_str(), loss[1], loss[0], kOutRtol, kOutAtol);
        close((label + ": parameter gradients").c_str(), g[1], g[0], kGradRtol, kGradAtol);
        close((label + ": input gradients").c_str(), dx[1], dx[0], kGradRtol, kGradAtol);
    }
}

// Tokens, lengths and per-step labels gathered from a device data set give
// what the same rows set from the host give.
void dataset_matches_host(int32_t device) {
    const char *spec = "input tokens 6 vocab=9; embedding 4; lstm 5; dense 9";
    Model m = make_model(spec, 3);
    move_to(m.get(), device);
    const size_t samples = 10, steps = 6;
    Random rng(8);
    std::vector<int32_t> ids(samples * steps), lengths(samples), labels(samples * steps);
    for (int32_t &id : ids) id = int32_t(rng.uniform(0.0f, 8.99f));
    for (size_t i = 0; i < samples; ++i) lengths[i] = int32_t(1 + i % steps);
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = i % 7 == 0 ? -1 : int32_t(i % 9);
    snn_dataset *raw = nullptr;
    CHECK_OK(snn_dataset_create_tokens(device, ids.data(), samples, steps, lengths.data(), labels.data(), steps,
                                       &raw));
    const int64_t idx[4] = {7, 2, 9, 0};
    float loss[2] = {0.0f, 0.0f};
    std::vector<float> y[2];
    for (int way = 0; way < 2; ++way) {
        Forward f = make_forward(m.get(), 4);
        Backward b = make_backward(m.get(), 4);
        if (way == 0) {
            CHECK_OK(snn_set_inputs_from_dataset(f.get(), raw, idx, 4));
            CHECK_OK(snn_set_labels_from_dataset(b.get(), raw, idx, 4));
        } else {
            CHECK_OK(snn_set_tokens_gather(f.get(), ids.data(), samples, idx, 4));
            CHECK_OK(snn_set_lengths_gather(f.get(), lengths.data(), samples, idx, 4));
            CHECK_OK(snn_set_labels_gather(b.get(), labels.data(), samples, idx, 4));
        }
        CHECK_OK(snn_forward(f.get(), m.get()));
        y[way] = outputs_of(f.get(), 4 * output_size(m.get()));
        CHECK_OK(snn_backprop(b.get(), f.get(), m.get(), SNN_LOSS_LOGIT_CROSSENTROPY, &loss[way]));
    }
    CHECK(y[0] == y[1]);
    CHECK(loss[0] == loss[1]);
    // A model whose vocabulary is smaller than the data set's ids refuses it.
    Model small = make_model("input tokens 6 vocab=5; embedding 4; lstm 5; dense 5", 3);
    move_to(small.get(), device);
    Forward f = make_forward(small.get(), 4);
    CHECK_STATUS(snn_set_inputs_from_dataset(f.get(), raw, idx, 4), SNN_ERR_TOKEN);
    snn_dataset_destroy(raw);
}

// Lengths set on a CPU cache travel with it when its model moves.
void cache_follows_with_lengths(int32_t device) {
    const char *spec = "input tokens 7 vocab=11; embedding 5; gru 6 last; dense 3";
    Model m = make_model(spec, 4);
    Forward f = make_forward(m.get(), 3);
    Random rng(6);
    const Feed feed = make_feed(m.get(), 3, rng);
    set_feed(f.get(), feed);
    CHECK_OK(snn_forward(f.get(), m.get()));
    const std::vector<float> before = outputs_of(f.get(), 3 * output_size(m.get()));
    move_to(m.get(), device);
    CHECK_OK(snn_forward(f.get(), m.get()));  // the cache follows: same inputs, same lengths
    close("outputs after following the model", outputs_of(f.get(), 3 * output_size(m.get())), before, kOutRtol,
          kOutAtol);
}

}  // namespace

int main() {
    const int32_t device = test_device();
    for (const Case &c : kCases)
        for (bool training : {true, false}) compare(c, training, device);
    dataset_matches_host(device);
    cache_follows_with_lengths(device);
    return finish("gpu sequences");
}

// Fuzz target: builds a sequence model from the bytes (float sequences or
// token ids; embedding, posembed, dense, activations, layernorm, softmax,
// dropout, residual adds, lstm, gru, attention, conv1d, seqpool, over odd
// geometries: 1 step, 1 feature, one head per feature, lengths 1 and T) and
// runs it with per-sample lengths: forward in both modes, backward with an
// output gradient and with cross-entropy. What must hold, on every model:
//   - padding is padding: other values (or token ids) at the padded steps of
//     the input change no output at a valid step (nor a pooled or last-step
//     vector), no parameter gradient and no input gradient at a valid step,
//     bit for bit; and with the output gradient zero at padded steps, the
//     input gradient at padded steps is exactly 0;
//   - the outputs are finite (inputs and parameters are small);
//   - a saved and loaded model runs to the same bits.
// Sizes are bounded so that an input runs in milliseconds.
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "snn.h"

#include "fuzz_bytes.h"
#include "fuzz_options.h"
#include "fuzz_target.h"

namespace {

// A node's output as the builder tracks it.
struct Node {
    bool seq;        // else a vector
    int64_t f;       // features (per step)
    std::string name;
};

struct Spec {
    std::string text;
    bool tokens = false;
    int64_t steps = 1, vocab = 0;
    std::vector<Node> nodes;
};

// The next op, when it fits the node: nothing otherwise.
bool choose_op(Bytes &b, Spec &s, Node &n, std::string &t) {
    const unsigned op = b.pick(14);
    if (!n.seq) {  // after pooling: vector ops only
        if (op % 3 == 0) {
            n.f = b.in(1, 12);
            t = "dense " + std::to_string(n.f) + " " + kActs[b.pick(7)];
        } else if (op % 3 == 1) {
            t = b.pick(2) ? "layernorm" : kActs[1 + b.pick(6)];
        } else {
            t = "softmax";
        }
        return true;
    }
    switch (op) {
        case 0:
        case 1:
            n.f = b.in(1, 12);
            t = "dense " + std::to_string(n.f) + " " + kActs[b.pick(7)];
            if (b.pick(4) == 0) t += " nobias";
            return true;
        case 2:
            t = kActs[1 + b.pick(6)];
            return true;
        case 3:
            t = b.pick(2) ? "layernorm" : "layernorm eps=0.01";
            return true;
        case 4:
            t = b.pick(2) ? "softmax" : (b.pick(2) ? "dropout 0.5" : "dropout 0");
            return true;
        case 5:
            t = "posembed";
            return true;
        case 6:
        case 7: {
            const bool lstm = op == 6, bidirectional = b.pick(3) == 0, last = b.pick(3) == 0;
            const int64_t h = b.in(1, 8);
            t = std::string(lstm ? "lstm " : "gru ") + std::to_string(h);
            if (bidirectional) t += " bidirectional";
            if (last) t += " last";
            if (b.pick(5) == 0) t += " nobias";
            n.f = bidirectional ? 2 * h : h;
            n.seq = !last;
            return true;
        }
        case 8: {
            // heads dividing the features
            std::vector<int64_t> heads;
            for (int64_t h = 1; h <= n.f; ++h)
                if (n.f % h == 0) heads.push_back(h);
            t = "attention heads=" + std::to_string(heads[b.pick(unsigned(heads.size()))]);
            if (b.pick(2)) t += " causal";
            return true;
        }
        case 9: {
            // conv1d keeping the steps (lengths need them kept): stride 1,
            // an odd kernel, padding d(k-1)/2
            const int64_t d = b.in(1, 3), k = 1 + 2 * b.in(0, 2);
            const int64_t out = b.in(1, 10);
            t = "conv1d " + std::to_string(k) + " " + std::to_string(out) + " " + kActs[b.pick(7)];
            t += " pad=" + std::to_string(d * (k - 1) / 2);
            if (d > 1) t += " dilation=" + std::to_string(d);
            n.f = out;
            return true;
        }
        case 10: {
            const char *modes[] = {"last", "mean", "max"};
            t = std::string("seqpool ") + modes[b.pick(3)];
            n.seq = false;
            return true;
        }
        default: {  // add an earlier named node of the same shape
            const Node &o = s.nodes[b.pick(unsigned(s.nodes.size()))];
            if (o.name.empty() || o.seq != n.seq || o.f != n.f || (s.tokens && &o == &s.nodes[0])) return false;
            t = "add " + o.name;
            return true;
        }
    }
}

Spec build_spec(Bytes &b) {
    Spec s;
    s.steps = b.in(1, 9);
    s.tokens = b.pick(2);
    Node in{true, 1, ""};
    if (s.tokens) {
        s.vocab = b.in(1, 20);
        s.text = "input tokens " + std::to_string(s.steps) + " vocab=" + std::to_string(s.vocab);
        s.nodes.push_back(in);
        const int64_t d = b.in(1, 10);
        s.text += "; embedding " + std::to_string(d);
        if (b.pick(3) == 0) s.text += " pad=" + std::to_string(b.pick(unsigned(s.vocab)));
        in.f = d;
    } else {
        in.f = b.in(1, 8);
        s.text = "input seq " + std::to_string(s.steps) + "x" + std::to_string(in.f);
    }
    if (b.pick(3) == 0) {
        in.name = "x";
        s.text += " name=x";
    }
    s.nodes.push_back(in);
    const int layers = 1 + int(b.pick(6));
    for (int i = 0; i < layers; ++i) {
        Node n = s.nodes.back();
        std::string t;
        if (!choose_op(b, s, n, t)) continue;
        n.name.clear();
        if (b.pick(3) == 0) {
            n.name = "n" + std::to_string(s.nodes.size());
            t += " name=" + n.name;
        }
        s.text += "; " + t;
        s.nodes.push_back(n);
    }
    return s;
}

struct Run {
    std::vector<float> y_inference, y_training, grads_out, dx_out, grads_xent;
    float loss = 0.0f;
};

struct Feed {
    std::vector<float> x;
    std::vector<int32_t> ids, lengths, labels;
    std::vector<float> dy;
};

void set_inputs(snn_forward_cache *f, const Spec &s, const Feed &feed) {
    if (s.tokens)
        must(snn_set_tokens(f, feed.ids.data(), feed.ids.size()), "snn_set_tokens");
    else
        must(snn_set_inputs(f, feed.x.data(), feed.x.size()), "snn_set_inputs");
    must(snn_set_lengths(f, feed.lengths.data(), feed.lengths.size()), "snn_set_lengths");
}

Run run(snn_model *m, const Spec &s, const Feed &feed, int64_t batch, size_t out) {
    Run r;
    snn_forward_cache *f = nullptr;
    snn_backward_cache *g = nullptr;
    must(snn_preallocate(m, batch, &f), "snn_preallocate");
    must(snn_preallocate_grads(m, batch, &g), "snn_preallocate_grads");
    must(snn_cache_set_seed(f, 3), "snn_cache_set_seed");
    if (!s.tokens) must(snn_set_input_gradient(g, 1), "snn_set_input_gradient");
    set_inputs(f, s, feed);
    must(snn_cache_set_training(f, 0), "snn_cache_set_training");
    must(snn_forward(f, m), "snn_forward (inference)");
    r.y_inference = outputs(f, size_t(batch) * out);
    must(snn_cache_set_training(f, 1), "snn_cache_set_training");
    must(snn_forward(f, m), "snn_forward (training)");
    r.y_training = outputs(f, size_t(batch) * out);
    must(snn_backprop_with_output_gradient(g, f, m, feed.dy.data(), feed.dy.size()), "snn_backprop (gradient)");
    size_t count = 0;
    snn_parameter_count(m, &count);
    r.grads_out.resize(count);
    if (count) must(snn_get_gradients(g, r.grads_out.data(), count), "snn_get_gradients");
    if (!s.tokens) {
        r.dx_out.resize(feed.x.size());
        must(snn_get_input_gradients(g, r.dx_out.data(), r.dx_out.size()), "snn_get_input_gradients");
    }
    must(snn_set_labels(g, feed.labels.data(), feed.labels.size()), "snn_set_labels");
    must(snn_backprop(g, f, m, SNN_LOSS_LOGIT_CROSSENTROPY, &r.loss), "snn_backprop (cross-entropy)");
    r.grads_xent.resize(count);
    if (count) must(snn_get_gradients(g, r.grads_xent.data(), count), "snn_get_gradients");
    snn_backward_cache_destroy(g);
    snn_forward_cache_destroy(f);
    return r;
}

void expect_same(const char *what, const std::string &spec, const std::vector<float> &a,
                 const std::vector<float> &b, const std::vector<char> &counts) {
    if (a.size() != b.size()) abort();
    for (size_t i = 0; i < a.size(); ++i) {
        if (!counts.empty() && !counts[i]) continue;
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
            fprintf(stderr, "%s: %s[%zu] %.9g then %.9g with other values at padded steps\n", spec.c_str(), what, i,
                    double(a[i]), double(b[i]));
            abort();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Bytes b{data, size};
    const int64_t batch = 1 + b.pick(4);
    must(snn_set_num_threads(1 + int32_t(b.pick(2))), "snn_set_num_threads");
    const Spec s = build_spec(b);
    snn_model *m = nullptr;
    fuzz_last_status = fuzz_check(snn_model_create(s.text.c_str(), &m));
    if (fuzz_last_status != SNN_OK) return 0;
    size_t count = 0, in = 0, out = 0;
    int64_t layers = 0, c = 0, h = 0, w = 0;
    snn_parameter_count(m, &count);
    snn_model_input_size(m, &in);
    snn_model_output_size(m, &out);
    snn_model_layer_count(m, &layers);
    snn_model_layer_shape(m, layers - 1, &c, &h, &w);
    const bool seq_out = s.nodes.back().seq;
    const int64_t out_steps = seq_out ? h : 1;
    // Small parameters keep every value finite.
    std::vector<float> params(count);
    for (float &p : params) p = 0.25f * (float(b.pick(9)) - 4.0f) / 4.0f;
    if (count) must(snn_set_parameters(m, params.data(), count), "snn_set_parameters");

    Feed feed;
    for (int64_t i = 0; i < batch; ++i) feed.lengths.push_back(int32_t(b.in(1, s.steps)));
    feed.lengths[0] = int32_t(b.pick(2) ? s.steps : 1);
    auto padded_in = [&](size_t i) {  // element i of the inputs lies at a padded step
        const size_t per_step = size_t(in / s.steps);
        return int64_t(i / per_step) % s.steps >= feed.lengths[i / size_t(in)];
    };
    std::vector<char> valid_out(size_t(batch) * out, 1), valid_in(size_t(batch) * in, 1);
    for (size_t i = 0; i < valid_in.size(); ++i) valid_in[i] = !padded_in(i);
    if (seq_out)
        for (size_t i = 0; i < valid_out.size(); ++i)
            valid_out[i] = int64_t(i / size_t(c)) % out_steps < feed.lengths[i / out];
    if (s.tokens) {
        feed.ids.resize(size_t(batch) * in);
        for (int32_t &id : feed.ids) id = int32_t(b.pick(unsigned(s.vocab)));
    } else {
        feed.x.resize(size_t(batch) * in);
        for (float &v : feed.x) v = 0.5f * (float(b.pick(9)) - 4.0f);
    }
    feed.dy.resize(size_t(batch) * out);
    for (size_t i = 0; i < feed.dy.size(); ++i) feed.dy[i] = valid_out[i] ? 0.25f * (float(b.pick(9)) - 4.0f) : 0.0f;
    feed.labels.resize(size_t(batch) * size_t(out_steps));
    for (int32_t &l : feed.labels) l = b.pick(6) == 0 && seq_out ? -1 : int32_t(b.pick(unsigned(c)));

    const Run first = run(m, s, feed, batch, out);
    for (float v : first.y_training)
        if (!isfinite(v)) {
            fprintf(stderr, "%s: an output is not finite\n", s.text.c_str());
            abort();
        }
    // Other values at padded steps: the same results where they count.
    Feed other = feed;
    for (size_t i = 0; i < other.x.size(); ++i)
        if (!valid_in[i]) other.x[i] = 7.0f - other.x[i];
    for (size_t i = 0; i < other.ids.size(); ++i)
        if (!valid_in[i]) other.ids[i] = int32_t((other.ids[i] + 1) % s.vocab);
    const Run second = run(m, s, other, batch, out);
    expect_same("inference outputs", s.text, first.y_inference, second.y_inference, valid_out);
    expect_same("training outputs", s.text, first.y_training, second.y_training, valid_out);
    expect_same("parameter gradients (output gradient)", s.text, first.grads_out, second.grads_out, {});
    expect_same("parameter gradients (cross-entropy)", s.text, first.grads_xent, second.grads_xent, {});
    expect_same("input gradients", s.text, first.dx_out, second.dx_out, valid_in);
    expect_same("loss", s.text, {first.loss}, {second.loss}, {});
    for (size_t i = 0; i < first.dx_out.size(); ++i)
        if (!valid_in[i] && first.dx_out[i] != 0.0f) {
            fprintf(stderr, "%s: input gradient %zu at a padded step is %.9g\n", s.text.c_str(), i,
                    double(first.dx_out[i]));
            abort();
        }

    // Saved and loaded, the model runs to the same bits.
    snn_model *loaded = save_and_load(m);
    const Run again = run(loaded, s, feed, batch, out);
    expect_same("outputs after load", s.text, first.y_training, again.y_training, {});
    snn_model_destroy(loaded);
    snn_model_destroy(m);
    return 0;
}

// Sequence models at the C boundary: token ids, per-sample lengths, token
// data sets, and the shape of a sequence input.
#include <memory>

#include "api/guard.h"

using namespace snn;

namespace {

// The model's input must be token ids.
int64_t vocabulary(const ForwardCache &c) {
    if (!c.net.input().is_tokens)
        fail(SNN_ERR_UNSUPPORTED, "the model's input is %s, not token ids (use snn_set_inputs)",
             shape_text(c.net.input()).c_str());
    return c.net.layers.front().units;
}

// Each id of n samples of `steps` ids (rows of `tokens`, by index when
// indices is non-null) in [0, vocab).
void check_tokens(const int32_t *tokens, const int64_t *indices, size_t n, size_t steps, int64_t vocab) {
    for (size_t i = 0; i < n; ++i) {
        const int32_t *row = tokens + (indices ? size_t(indices[i]) : i) * steps;
        for (size_t t = 0; t < steps; ++t)
            if (row[t] < 0 || row[t] >= vocab)
                fail(SNN_ERR_TOKEN, "token %d of sample %zu, step %zu is outside [0, %lld) (the vocabulary)", row[t],
                     i, t, (long long)vocab);
    }
}

// Lengths need a sequence input and every sequence node at its T steps.
int64_t sequence_steps(const ForwardCache &c) {
    const Shape &in = c.net.input();
    if (!in.is_seq)
        fail(SNN_ERR_UNSUPPORTED, "the model's input is %s, not a sequence: it has no lengths",
             shape_text(in).c_str());
    for (size_t i = 1; i < c.net.layers.size(); ++i) {
        const Shape &out = c.net.layers[i].out;
        if (out.is_seq && out.h != in.h)
            fail(SNN_ERR_UNSUPPORTED,
                 "layer %zu's output has %lld steps, the input %lld: lengths need every sequence layer to keep "
                 "the input's steps",
                 i, (long long)out.h, (long long)in.h);
    }
    return in.h;
}

void check_lengths(const int32_t *lengths, const int64_t *indices, size_t n, int64_t steps) {
    for (size_t i = 0; i < n; ++i) {
        const int32_t v = lengths[indices ? size_t(indices[i]) : i];
        if (v < 1 || v > steps)
            fail(SNN_ERR_INVALID_ARGUMENT, "length %d of sample %zu is outside [1, %lld] (the model's steps)", v, i,
                 (long long)steps);
    }
}

// Lengths are set for the inputs already set (which reset them).
void need_inputs(const ForwardCache &c, const char *setter) {
    if (c.input_batch < 1)
        fail(SNN_ERR_STATE, "no inputs set for the current batch (set the tokens or inputs before %s)", setter);
}

}  // namespace

extern "C" {

SNN_API snn_status snn_model_input_sequence(const snn_model *model, int64_t *steps, int64_t *vocab) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(steps, "steps");
        need(vocab, "vocab");
        const Shape &in = model->m.net.input();
        *steps = in.is_seq ? in.h : 0;
        *vocab = in.is_tokens ? model->m.net.layers.front().units : 0;
    });
}

SNN_API snn_status snn_set_tokens(snn_forward_cache *cache, const int32_t *tokens, size_t count) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        ForwardCache &c = cache->c;
        const int64_t vocab = vocabulary(c);
        const size_t steps = input_features(c);
        check_buffer(tokens, "tokens", count, batch_count(c.batch, steps), "ids");
        check_tokens(tokens, nullptr, size_t(c.batch), steps, vocab);
        forward_set_tokens(c, tokens, "snn_set_tokens");
    });
}

SNN_API snn_status snn_set_tokens_gather(snn_forward_cache *cache, const int32_t *tokens, size_t sample_count,
                                         const int64_t *indices, size_t n) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need_buffer(tokens, "tokens", sample_count);
        need_buffer(indices, "indices", n);
        ForwardCache &c = cache->c;
        const int64_t vocab = vocabulary(c);
        check_batch_n(n, c.max_batch);
        check_indices(indices, n, sample_count);
        check_tokens(tokens, indices, n, input_features(c), vocab);
        forward_gather_tokens(c, tokens, indices, n, "snn_set_tokens_gather");
    });
}

SNN_API snn_status snn_set_lengths(snn_forward_cache *cache, const int32_t *lengths, size_t n) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        ForwardCache &c = cache->c;
        const int64_t steps = sequence_steps(c);
        need_inputs(c, "snn_set_lengths");
        check_buffer(lengths, "lengths", n, count_of(size_t(c.input_batch), "one per sample of the inputs set"),
                     "lengths");
        check_lengths(lengths, nullptr, n, steps);
        forward_set_lengths(c, lengths);
    });
}

SNN_API snn_status snn_set_lengths_gather(snn_forward_cache *cache, const int32_t *lengths, size_t sample_count,
                                          const int64_t *indices, size_t n) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need_buffer(lengths, "lengths", sample_count);
        need_buffer(indices, "indices", n);
        ForwardCache &c = cache->c;
        const int64_t steps = sequence_steps(c);
        need_inputs(c, "snn_set_lengths_gather");
        if (int64_t(n) != c.input_batch)
            fail(SNN_ERR_COUNT, "expected %lld indices (the batch of the inputs set), got %zu",
                 (long long)c.input_batch, n);
        check_indices(indices, n, sample_count);
        check_lengths(lengths, indices, n, steps);
        forward_gather_lengths(c, lengths, indices, n);
    });
}

SNN_API snn_status snn_dataset_create_tokens(int32_t device, const int32_t *tokens, size_t sample_count,
                                             size_t steps, const int32_t *lengths, const int32_t *labels,
                                             size_t labels_per_sample, snn_dataset **out) {
    return guarded(__func__, [&] {
        need_buffer(tokens, "tokens", sample_count);
        need(out, "out");
        if (sample_count == 0 || steps == 0)
            fail(SNN_ERR_INVALID_ARGUMENT, "sample_count (%zu) and steps (%zu) must be > 0", sample_count, steps);
        if (steps > SIZE_MAX / sizeof(float) / sample_count)
            fail(SNN_ERR_INVALID_ARGUMENT, "%zu samples x %zu steps is too large", sample_count, steps);
        if (labels && labels_per_sample != 1 && labels_per_sample != steps)
            fail(SNN_ERR_INVALID_ARGUMENT,
                 "labels_per_sample is %zu; it must be 1 (one label per sample) or steps (%zu, one per step)",
                 labels_per_sample, steps);
        for (size_t i = 0; i < sample_count * steps; ++i)
            if (tokens[i] < 0 || tokens[i] > (1 << 24))
                fail(SNN_ERR_TOKEN, "tokens[%zu] = %d is negative or above 2^24", i, tokens[i]);
        if (lengths) check_lengths(lengths, nullptr, sample_count, int64_t(steps));
        if (labels)
            for (size_t i = 0; i < sample_count * labels_per_sample; ++i)
                if (labels[i] < -1 || (labels[i] == -1 && labels_per_sample == 1))
                    fail(SNN_ERR_INVALID_ARGUMENT, "labels[%zu] = %d is negative%s", i, labels[i],
                         labels_per_sample == 1 ? "" : " and not -1 (ignore the step)");
        Backend &be = backend_for(device);
        auto ds = std::make_unique<snn_dataset>();
        dataset_init_tokens(*ds, be, tokens, sample_count, steps, lengths, labels, labels ? labels_per_sample : 1);
        *out = ds.release();
    });
}

}  // extern "C"

/* From the first step on, snn_forward (in training and in inference mode),
 * snn_backprop and snn_optimiser_step make no heap allocation: an MLP and a
 * CNN, each optimiser (also clipping by the gradient norm), both losses, batch truncation, gathers and input
 * gradients, inference passes with batchnorm folded (inference rewrites),
 * and the example's networks at batches 1 to 4, whose products
 * are small enough for OpenBLAS's small-matrix kernels (which allocate: the
 * meson test runs this under each core OpenBLAS may pick). */
#include <stdio.h>
#include <stdlib.h>

#include "alloc_counter.h"
#include "models.h"
#include "snn.h"

static int failures = 0;
/* > 0: the optimiser clips by the gradient norm, read after every step */
static double max_grad_norm = 0.0;
/* The precision of the forward caches (the products' ops plan their bf16
 * packing in the workspace). */
static snn_precision precision = SNN_PRECISION_FLOAT32;

#define CHECK(call)                                                                    \
    do {                                                                               \
        if ((call) != SNN_OK) {                                                        \
            fprintf(stderr, "%s:%d %s failed: %s\n", __FILE__, __LINE__, #call,        \
                    snn_last_error());                                                 \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static void run_case(const char *spec, snn_loss loss, snn_optimiser_kind kind, int input_grad, int64_t batch) {
    snn_model *m = NULL;
    snn_forward_cache *f = NULL;
    snn_backward_cache *b = NULL;
    snn_optimiser *o = NULL;
    size_t in = 0, out = 0;
    CHECK(snn_model_create(spec, &m));
    CHECK(snn_model_input_size(m, &in));
    CHECK(snn_model_output_size(m, &out));
    CHECK(snn_preallocate(m, batch, &f));
    /* Inference rewrites on: the inference-mode passes below fold the
       batchnorms (and make the folded copy again after each optimiser step)
       without allocating; training-mode passes are not rewritten. */
    CHECK(snn_cache_set_inference_rewrites(f, 1));
    CHECK(snn_cache_set_precision(f, precision));
    CHECK(snn_preallocate_grads(m, batch, &b));
    CHECK(snn_optimiser_create(m, kind, &o));
    if (kind == SNN_OPTIMISER_SGD) CHECK(snn_optimiser_set(o, SNN_HP_MOMENTUM, 0.9));
    if (max_grad_norm > 0.0) CHECK(snn_optimiser_set(o, SNN_HP_MAX_GRAD_NORM, max_grad_norm));
    CHECK(snn_set_input_gradient(b, input_grad));

    float *x = malloc(sizeof(float) * in * batch * 4);
    float *t = malloc(sizeof(float) * out * batch);
    int32_t *labels = malloc(sizeof(int32_t) * batch * 4);
    int64_t idx[16];
    if (batch > 16) exit(2);
    for (size_t i = 0; i < in * batch * 4; ++i) x[i] = (float)((i * 7919) % 101) / 101.0f;
    for (size_t i = 0; i < out * batch; ++i) t[i] = (float)(i % 3) * 0.5f;
    for (int i = 0; i < batch * 4; ++i) labels[i] = (int32_t)(i % (int)out);
    for (int i = 0; i < batch; ++i) idx[i] = (i * 5) % (batch * 4);

    /* Counted from the very first step: snn_preallocate, snn_preallocate_grads
       and snn_optimiser_create made every buffer (and the thread pool). At
       bf16, the backward cache follows the forward cache's precision in its
       first snn_backprop (a one-off, see snn_cache_set_precision): counted
       from the second step. */
    float value = 0.0f;
    for (int step = 0; step < 3; ++step) {
        if (step == (precision == SNN_PRECISION_FLOAT32 ? 0 : 1)) alloc_counter_start();
        CHECK(snn_set_inputs_gather(f, x, (size_t)batch * 4, idx, (size_t)batch));
        CHECK(snn_forward(f, m));
        if (loss != SNN_LOSS_LOGIT_CROSSENTROPY) CHECK(snn_set_targets(b, t, out * (size_t)batch));
        else CHECK(snn_set_labels_gather(b, labels, (size_t)batch * 4, idx, (size_t)batch));
        CHECK(snn_backprop(b, f, m, loss, NULL));
        CHECK(snn_optimiser_step(o, m, b));
    }
    for (int step = 0; step < 10; ++step) {
        int64_t n = step % 2 || batch == 1 ? batch : batch / 2; /* truncated batches too */
        CHECK(snn_set_inputs_gather(f, x, (size_t)batch * 4, idx, (size_t)n));
        CHECK(snn_forward(f, m));
        if (loss != SNN_LOSS_LOGIT_CROSSENTROPY) CHECK(snn_set_targets(b, t, out * (size_t)n));
        else CHECK(snn_set_labels_gather(b, labels, (size_t)batch * 4, idx, (size_t)n));
        CHECK(snn_backprop(b, f, m, loss, &value));
        CHECK(snn_optimiser_step(o, m, b));
        if (max_grad_norm > 0.0) {
            double norm = 0.0;
            CHECK(snn_optimiser_grad_norm(o, &norm));
        }
    }
    CHECK(snn_cache_set_batch(f, batch));
    CHECK(snn_set_inputs(f, x, in * (size_t)batch));
    CHECK(snn_forward(f, m));
    CHECK(snn_cache_set_training(f, 0));
    for (int step = 0; step < 3; ++step) CHECK(snn_forward(f, m));
    CHECK(snn_cache_set_training(f, 1));
    size_t allocations = alloc_counter_stop();

    printf("%-70.70s batch %2lld loss %d opt %d: %zu allocations\n", spec, (long long)batch, loss, kind,
           allocations);
    if (allocations != 0) {
        fprintf(stderr, "FAIL: %zu heap allocations in the training loop\n", allocations);
        failures++;
    }
    free(x);
    free(t);
    free(labels);
    snn_optimiser_destroy(o);
    snn_backward_cache_destroy(b);
    snn_forward_cache_destroy(f);
    snn_model_destroy(m);
}

/* A sequence model: token ids (when its input is 'input tokens') or floats
 * gathered by index, lengths gathered with them, and labels one per step of
 * a sequence output (some -1) or one per sample. */
static void run_sequence_case(const char *spec, snn_optimiser_kind kind, int64_t batch) {
    snn_model *m = NULL;
    snn_forward_cache *f = NULL;
    snn_backward_cache *b = NULL;
    snn_optimiser *o = NULL;
    size_t in = 0, out = 0;
    int64_t steps = 0, vocab = 0, c = 0, h = 0, w = 0, layers = 0;
    CHECK(snn_model_create(spec, &m));
    CHECK(snn_model_input_size(m, &in));
    CHECK(snn_model_output_size(m, &out));
    CHECK(snn_model_input_sequence(m, &steps, &vocab));
    CHECK(snn_model_layer_count(m, &layers));
    CHECK(snn_model_layer_shape(m, layers - 1, &c, &h, &w));
    CHECK(snn_preallocate(m, batch, &f));
    CHECK(snn_cache_set_precision(f, precision));
    CHECK(snn_preallocate_grads(m, batch, &b));
    CHECK(snn_optimiser_create(m, kind, &o));
    /* labels per sample: out / c steps of c classes (1 for a vector output) */
    const size_t per = out / (size_t)c, samples = (size_t)batch * 4;
    float *x = malloc(sizeof(float) * in * samples);
    int32_t *ids = malloc(sizeof(int32_t) * in * samples);
    int32_t *lengths = malloc(sizeof(int32_t) * samples);
    int32_t *labels = malloc(sizeof(int32_t) * per * samples);
    int64_t idx[16];
    if (batch > 16) exit(2);
    for (size_t i = 0; i < in * samples; ++i) {
        x[i] = (float)((i * 7919) % 101) / 101.0f;
        ids[i] = vocab ? (int32_t)((i * 31) % (size_t)vocab) : 0;
    }
    for (size_t i = 0; i < samples; ++i) lengths[i] = 1 + (int32_t)(i % (size_t)steps);
    for (size_t i = 0; i < per * samples; ++i) labels[i] = i % 7 == 3 && per > 1 ? -1 : (int32_t)(i % (size_t)c);
    for (int i = 0; i < batch; ++i) idx[i] = (i * 5) % (batch * 4);

    size_t allocations = 0;
    float value = 0.0f;
    for (int step = 0; step < 13; ++step) {
        /* from the very first step (the second at bf16, as above) */
        if (step == (precision == SNN_PRECISION_FLOAT32 ? 0 : 1)) alloc_counter_start();
        int64_t n = step % 2 || batch == 1 ? batch : batch / 2;
        if (vocab)
            CHECK(snn_set_tokens_gather(f, ids, samples, idx, (size_t)n));
        else
            CHECK(snn_set_inputs_gather(f, x, samples, idx, (size_t)n));
        CHECK(snn_set_lengths_gather(f, lengths, samples, idx, (size_t)n));
        CHECK(snn_forward(f, m));
        CHECK(snn_set_labels_gather(b, labels, samples, idx, (size_t)n));
        CHECK(snn_backprop(b, f, m, SNN_LOSS_LOGIT_CROSSENTROPY, &value));
        CHECK(snn_optimiser_step(o, m, b));
    }
    CHECK(snn_cache_set_training(f, 0));
    for (int step = 0; step < 3; ++step) CHECK(snn_forward(f, m));
    CHECK(snn_cache_set_training(f, 1));
    allocations = alloc_counter_stop();
    printf("%-70.70s batch %2lld (sequence): %zu allocations\n", spec, (long long)batch, allocations);
    if (allocations != 0) {
        fprintf(stderr, "FAIL: %zu heap allocations in the training loop\n", allocations);
        failures++;
    }
    free(x);
    free(ids);
    free(lengths);
    free(labels);
    snn_optimiser_destroy(o);
    snn_backward_cache_destroy(b);
    snn_forward_cache_destroy(f);
    snn_model_destroy(m);
}

int main(void) {
    const char *mlp = "input 20; dense 32 relu; dense 16 tanh; dense 4 sigmoid; dense 3";
    const char *cnn =
        "input 12x12x2; conv 3x3 4 relu pad=1; maxpool 2; conv 3 6 leaky_relu stride=2; "
        "avgpool 1; flatten; dense 5";
    /* both thread counts: OpenBLAS's threaded path must not allocate either */
    for (int threads = 1; threads <= 2; ++threads) {
        CHECK(snn_set_num_threads(threads));
        run_case(mlp, SNN_LOSS_MSE, SNN_OPTIMISER_ADAM, 0, 16);
        run_case(mlp, SNN_LOSS_LOGIT_CROSSENTROPY, SNN_OPTIMISER_SGD, 1, 16);
        run_case(mlp, SNN_LOSS_MSE, SNN_OPTIMISER_RMSPROP, 0, 16);
        run_case(mlp, SNN_LOSS_HUBER, SNN_OPTIMISER_ADAM, 0, 16);
        run_case(mlp, SNN_LOSS_SMOOTH_L1, SNN_OPTIMISER_SGD, 1, 16);
        run_case(cnn, SNN_LOSS_BCE_WITH_LOGITS, SNN_OPTIMISER_ADAM, 1, 16);
        run_case(mlp, SNN_LOSS_MSE, SNN_OPTIMISER_LION, 0, 16);
        run_case(cnn, SNN_LOSS_LOGIT_CROSSENTROPY, SNN_OPTIMISER_ADAMW, 1, 16);
        run_case(cnn, SNN_LOSS_MSE, SNN_OPTIMISER_ADAM, 0, 16);
        run_case("input 784; dense 128 relu; dense 64 relu; dense 10", SNN_LOSS_LOGIT_CROSSENTROPY,
                 SNN_OPTIMISER_ADAM, 0, 16);
        /* recurrent layers: the per-step products of 16 (or 8) x 40 x 160,
           40 columns, on each thread's share of the batch */
        run_case("input seq 12x24; lstm 40 bidirectional; gru 40 last; dense 3", SNN_LOSS_LOGIT_CROSSENTROPY,
                 SNN_OPTIMISER_ADAM, 1, 16);
        /* dense 40's input gradient: 16 x 100 x 40, 100 columns */
        run_case("input 20; dense 100 relu; dense 40 relu; dense 3", SNN_LOSS_MSE, SNN_OPTIMISER_ADAM, 0, 16);
        run_case("input 6x6x2 name=x; conv 3 4 pad=1 gelu name=a; layernorm; concat x; silu; softmax; "
                 "globalavgpool; flatten; dense 8 gelu; batchnorm; dropout 0.5; dense 3",
                 SNN_LOSS_MSE, SNN_OPTIMISER_SGD, 1, 16);
        /* sequence ops: conv1d's lowered products in the workspace */
        run_case("input seq 24x8; posembed; conv1d 3 16 relu pad=1; conv1d 5 12 gelu stride=2 dilation=2; "
                 "seqpool max; dense 3",
                 SNN_LOSS_MSE, SNN_OPTIMISER_ADAM, 1, 16);
        /* examples/fashion_mnist's networks (--model simplenns, default,
         * resnet: batchnorm with running statistics, residual adds,
         * dropout) at small batches */
        for (int64_t batch = 1; batch <= 4; ++batch) {
            run_case(FASHION_MNIST_SIMPLENNS_SPEC, SNN_LOSS_LOGIT_CROSSENTROPY, SNN_OPTIMISER_ADAM, 0, batch);
            run_case(FASHION_MNIST_DEFAULT_SPEC, SNN_LOSS_LOGIT_CROSSENTROPY, SNN_OPTIMISER_ADAM, 0, batch);
            run_case(FASHION_MNIST_RESNET_SPEC, SNN_LOSS_LOGIT_CROSSENTROPY, SNN_OPTIMISER_ADAMW, 1, batch);
        }
        run_case(FASHION_MNIST_DEFAULT_SPEC, SNN_LOSS_LOGIT_CROSSENTROPY, SNN_OPTIMISER_ADAM, 0, 16);
        /* sequences with lengths, labels per step or per sample */
        run_sequence_case("input seq 6x5; dense 8 gelu name=a; layernorm; dense 8; add a; softmax; dense 4",
                          SNN_OPTIMISER_ADAM, 16);
        run_sequence_case("input seq 6x5; dense 8 tanh; flatten; dense 3", SNN_OPTIMISER_SGD, 16);
        /* attention on one thread (batch 8) and over the workers (batch 16) */
        run_sequence_case("input seq 20x64; dense 64 name=h; layernorm; attention heads=4 causal; add h; dense 5",
                          SNN_OPTIMISER_ADAM, 16);
        /* clipping by the gradient norm, with each optimiser */
        max_grad_norm = 0.5;
        run_case(mlp, SNN_LOSS_MSE, SNN_OPTIMISER_SGD, 0, 16);
        run_case(mlp, SNN_LOSS_MSE, SNN_OPTIMISER_ADAM, 0, 16);
        run_case(cnn, SNN_LOSS_LOGIT_CROSSENTROPY, SNN_OPTIMISER_ADAMW, 0, 16);
        run_case(mlp, SNN_LOSS_MSE, SNN_OPTIMISER_RMSPROP, 0, 16);
        run_case(mlp, SNN_LOSS_MSE, SNN_OPTIMISER_LION, 0, 16);
        run_case(FASHION_MNIST_DEFAULT_SPEC, SNN_LOSS_LOGIT_CROSSENTROPY, SNN_OPTIMISER_LION, 0, 16);
        max_grad_norm = 0.0;
        /* bf16: every op with products, the fashion_mnist networks */
        precision = SNN_PRECISION_BF16;
        run_case(cnn, SNN_LOSS_LOGIT_CROSSENTROPY, SNN_OPTIMISER_ADAMW, 1, 16);
        run_case(FASHION_MNIST_DEFAULT_SPEC, SNN_LOSS_LOGIT_CROSSENTROPY, SNN_OPTIMISER_ADAM, 0, 16);
        run_case(FASHION_MNIST_RESNET_SPEC, SNN_LOSS_LOGIT_CROSSENTROPY, SNN_OPTIMISER_ADAMW, 1, 4);
        run_case("input seq 12x24; lstm 40 bidirectional; gru 40 last; dense 3", SNN_LOSS_LOGIT_CROSSENTROPY,
                 SNN_OPTIMISER_ADAM, 1, 16);
        run_case("input seq 24x8; posembed; conv1d 3 16 relu pad=1; conv1d 5 12 gelu stride=2 dilation=2; "
                 "seqpool max; dense 3",
                 SNN_LOSS_MSE, SNN_OPTIMISER_ADAM, 1, 16);
        run_sequence_case("input seq 20x64; dense 64 name=h; layernorm; attention heads=4 causal; add h; dense 5",
                          SNN_OPTIMISER_ADAM, 16);
        precision = SNN_PRECISION_FLOAT32;
    }
    return failures ? 1 : 0;
}

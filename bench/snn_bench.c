/* snn's benchmark cases. One line per case:
 *
 *   name median_us allocations
 *
 * median_us: median over repetitions of one call (a forward pass, or a whole
 * training step: forward, backprop and optimiser update); allocations: heap
 * allocations per call in steady state. startup_* cases time model creation
 * and every preallocation a training loop needs (snn_model_create,
 * snn_preallocate, snn_preallocate_grads, snn_optimiser_create) and count the
 * allocations they make. Threads: SNN_NUM_THREADS (default: all cores).
 * Usage: snn_bench [case ...] [--reps N] [--precision float32|bf16] [--rewrites]
 *        snn_bench --spec SPEC [--batch N] [--forward] [--reps N] [--precision P] [--rewrites]
 * The second form times one training step (or, with --forward, one forward
 * pass) of any model, as the case "custom": a way to see what one layer of
 * a case costs. --precision sets the forward cache's precision
 * (snn_cache_set_precision; its backward pass follows); a precision the CPU
 * cannot run exits with snn's message. Forward-only cases run in inference
 * mode (snn_cache_set_training(cache, 0)); --rewrites turns the cache's
 * inference rewrites on (snn_cache_set_inference_rewrites: batchnorm folded
 * into the layer before it).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/core/alloc_counter.h"
#include "models.h"
#include "snn.h"
#include "bench_util.h"


typedef struct {
    const char *name;
    const char *spec;
    int64_t batch;
    int train; /* 0: forward only */
    snn_loss loss;
    int startup; /* 1: time creation and preallocation instead of a step */
} bench_case;

static const bench_case cases[] = {
    {"seed_forward", "input 100; dense 200 relu; dense 1", 128, 0, 0, 0},
    {"mlp_train_step", "input 784; dense 128 relu; dense 64 relu; dense 10", 64, 1,
     SNN_LOSS_LOGIT_CROSSENTROPY, 0},
    {"tiny_train_step", "input 4; dense 32 tanh; dense 16 tanh; dense 4", 32, 1, SNN_LOSS_MSE, 0},
    {"tiny_forward", "input 4; dense 32 tanh; dense 16 tanh; dense 4", 32, 0, 0, 0},
    {"cnn_train_step",
     "input 28x28x1; conv 5x5 16 relu; maxpool 2; conv 3x3 8 relu; maxpool 4; flatten; dense 10",
     64, 1, SNN_LOSS_LOGIT_CROSSENTROPY, 0},
    {"cnn_inference_1000",
     "input 28x28x1; conv 5x5 16 relu; maxpool 2; conv 3x3 8 relu; maxpool 4; flatten; dense 10",
     1000, 0, 0, 0},
    {"cnn_inference_1",
     "input 28x28x1; conv 5x5 16 relu; maxpool 2; conv 3x3 8 relu; maxpool 4; flatten; dense 10",
     1, 0, 0, 0},
    {"default_cnn_train_step",
     "input 28x28x1; conv 3x3 32 relu pad=1; maxpool 2; conv 3x3 64 relu pad=1; maxpool 2; "
     "flatten; dense 128 relu; dense 10",
     64, 1, SNN_LOSS_LOGIT_CROSSENTROPY, 0},
    {"default_cnn_inference_1", FASHION_MNIST_DEFAULT_SPEC, 1, 0, 0, 0},
    {"default_cnn_inference_64", FASHION_MNIST_DEFAULT_SPEC, 64, 0, 0, 0},
    {"seed_forward_1", "input 100; dense 200 relu; dense 1", 1, 0, 0, 0},
    {"mlp_inference_1", "input 784; dense 128 relu; dense 64 relu; dense 10", 1, 0, 0, 0},
    /* examples/fashion_mnist's --model resnet */
    {"resnet_train_step", FASHION_MNIST_RESNET_SPEC, 64, 1, SNN_LOSS_LOGIT_CROSSENTROPY, 0},
    {"resnet_inference_1", FASHION_MNIST_RESNET_SPEC, 1, 0, 0, 0},
    {"resnet_inference_64", FASHION_MNIST_RESNET_SPEC, 64, 0, 0, 0},
    {"startup_tiny", "input 4; dense 32 tanh; dense 16 tanh; dense 4", 32, 1, SNN_LOSS_MSE, 1},
    {"startup_mlp", "input 784; dense 128 relu; dense 64 relu; dense 10", 64, 1,
     SNN_LOSS_LOGIT_CROSSENTROPY, 1},
    {"startup_cnn",
     "input 28x28x1; conv 5x5 16 relu; maxpool 2; conv 3x3 8 relu; maxpool 4; flatten; dense 10",
     64, 1, SNN_LOSS_LOGIT_CROSSENTROPY, 1},
};

static void run_startup(const bench_case *c, int reps) {
    double *times = malloc(sizeof(double) * (size_t)reps);
    alloc_counter_start();
    for (int r = 0; r < reps; ++r) {
        snn_model *m = NULL;
        snn_forward_cache *f = NULL;
        snn_backward_cache *b = NULL;
        snn_optimiser *o = NULL;
        double t0 = now_us();
        CHECK(snn_model_create(c->spec, &m));
        CHECK(snn_preallocate(m, c->batch, &f));
        CHECK(snn_preallocate_grads(m, c->batch, &b));
        CHECK(snn_optimiser_create(m, SNN_OPTIMISER_ADAM, &o));
        times[r] = now_us() - t0;
        snn_optimiser_destroy(o);
        snn_backward_cache_destroy(b);
        snn_forward_cache_destroy(f);
        snn_model_destroy(m);
    }
    size_t allocations = alloc_counter_stop();
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    printf("%s %.2f %.2f\n", c->name, times[reps / 2], (double)allocations / reps);
    fflush(stdout);
    free(times);
}

static void run(const bench_case *c, int reps, snn_precision precision, int rewrites) {
    snn_model *m = NULL;
    snn_forward_cache *f = NULL;
    snn_backward_cache *b = NULL;
    snn_optimiser *o = NULL;
    size_t in = 0, out = 0;
    CHECK(snn_model_create(c->spec, &m));
    CHECK(snn_model_input_size(m, &in));
    CHECK(snn_model_output_size(m, &out));
    CHECK(snn_preallocate(m, c->batch, &f));
    CHECK(snn_cache_set_precision(f, precision));
    if (!c->train) CHECK(snn_cache_set_training(f, 0));
    if (rewrites) CHECK(snn_cache_set_inference_rewrites(f, 1));
    float *x = malloc(sizeof(float) * in * (size_t)c->batch);
    float *t = malloc(sizeof(float) * out * (size_t)c->batch);
    int32_t *labels = malloc(sizeof(int32_t) * (size_t)c->batch);
    for (size_t i = 0; i < in * (size_t)c->batch; ++i) x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    for (size_t i = 0; i < out * (size_t)c->batch; ++i) t[i] = (float)((i * 40503u) % 100) / 100.0f;
    for (int64_t i = 0; i < c->batch; ++i) labels[i] = (int32_t)(i % (int64_t)out);
    CHECK(snn_set_inputs(f, x, in * (size_t)c->batch));
    if (c->train) {
        CHECK(snn_preallocate_grads(m, c->batch, &b));
        CHECK(snn_optimiser_create(m, SNN_OPTIMISER_ADAM, &o));
        if (c->loss == SNN_LOSS_MSE) CHECK(snn_set_targets(b, t, out * (size_t)c->batch));
        else CHECK(snn_set_labels(b, labels, (size_t)c->batch));
    }
    double *times = malloc(sizeof(double) * (size_t)reps);
    size_t allocations = 0;
    for (int r = -reps / 10 - 3; r < reps; ++r) { /* the first ones warm up */
        if (r == 0) alloc_counter_start();
        double t0 = now_us();
        CHECK(snn_forward(f, m));
        if (c->train) {
            CHECK(snn_backprop(b, f, m, c->loss, NULL));
            CHECK(snn_optimiser_step(o, m, b));
        }
        double t1 = now_us();
        if (r >= 0) times[r] = t1 - t0;
    }
    allocations = alloc_counter_stop();
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    printf("%s %.2f %.2f\n", c->name, times[reps / 2], (double)allocations / reps);
    fflush(stdout);
    free(times);
    free(x);
    free(t);
    free(labels);
    snn_optimiser_destroy(o);
    snn_backward_cache_destroy(b);
    snn_forward_cache_destroy(f);
    snn_model_destroy(m);
}

int main(int argc, char **argv) {
    int reps = 0, rewrites = 0;
    snn_precision precision = SNN_PRECISION_FLOAT32;
    const char *only[16];
    int n_only = 0;
    bench_case custom = {"custom", NULL, 64, 1, SNN_LOSS_MSE, 0};
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--spec") == 0 && i + 1 < argc) custom.spec = argv[++i];
        else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) custom.batch = atoll(argv[++i]);
        else if (strcmp(argv[i], "--forward") == 0) custom.train = 0;
        else if (strcmp(argv[i], "--rewrites") == 0) rewrites = 1;
        else if (strcmp(argv[i], "--precision") == 0 && i + 1 < argc) {
            const char *p = argv[++i];
            if (strcmp(p, "float32") == 0) precision = SNN_PRECISION_FLOAT32;
            else if (strcmp(p, "bf16") == 0) precision = SNN_PRECISION_BF16;
            else {
                fprintf(stderr, "--precision must be float32 or bf16, not %s\n", p);
                return 2;
            }
        }
        else if (n_only < 16) only[n_only++] = argv[i];
    }
    if (custom.spec) {
        if (custom.batch < 1) {
            fprintf(stderr, "--batch must be at least 1\n");
            return 2;
        }
        run(&custom, reps > 0 ? reps : 50, precision, rewrites);
        return 0;
    }
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        const bench_case *c = &cases[k];
        int wanted = n_only == 0;
        for (int i = 0; i < n_only; ++i) wanted |= strcmp(only[i], c->name) == 0;
        if (!wanted) continue;
        if (c->startup) {
            run_startup(c, reps > 0 ? reps : 200);
            continue;
        }
        /* Training cases stay below about 800 steps: past that, Adam's first
         * moment of weights whose gradient is always zero (dead relu units)
         * decays into subnormal floats, which slows the update several-fold
         * (measure that regime with --reps 3000). Convolutional networks
         * at batch 64 and any network at batch 1000 take milliseconds a call. */
        const int conv = strstr(c->name, "cnn") || strstr(c->name, "resnet");
        const int heavy = c->batch >= 1000 || (conv && c->batch >= 64);
        int r = reps > 0 ? reps : heavy ? 50 : c->train ? 500 : 2000;
        run(c, r, precision, rewrites);
    }
    return 0;
}

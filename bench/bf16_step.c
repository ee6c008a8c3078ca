/* A training step (forward, backprop, Adam) at float32 and at bf16, for the
 * precision figures of bench/results.md until snn_bench takes a precision:
 *
 *   bf16_step [resnet | default | --spec SPEC] [--threads N] [--reps N] [--cpu-time]
 *
 * resnet and default are examples/fashion_mnist's networks (batch 64, as
 * snn_bench's resnet_train_step and default_cnn_train_step). Prints the
 * median microseconds of a step at each precision, the allocations per
 * step and the speed-up. --cpu-time times the process's CPU time instead of
 * the wall clock: with one thread, a figure that other processes sharing
 * the cores disturb less.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/core/alloc_counter.h"
#include "models.h"
#include "snn.h"

#define CHECK(call)                                                                    \
    do {                                                                               \
        if ((call) != SNN_OK) {                                                        \
            fprintf(stderr, "%s failed: %s\n", #call, snn_last_error());               \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static clockid_t clock_used = CLOCK_MONOTONIC;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(clock_used, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median step in microseconds; *allocations per step. */
static double run(const char *spec, snn_precision precision, int reps, double *allocations) {
    const int64_t batch = 64;
    snn_model *m = NULL;
    snn_forward_cache *f = NULL;
    snn_backward_cache *b = NULL;
    snn_optimiser *o = NULL;
    size_t in = 0, out = 0;
    CHECK(snn_model_create(spec, &m));
    CHECK(snn_model_input_size(m, &in));
    CHECK(snn_model_output_size(m, &out));
    CHECK(snn_preallocate(m, batch, &f));
    CHECK(snn_cache_set_precision(f, precision));
    CHECK(snn_preallocate_grads(m, batch, &b));
    CHECK(snn_optimiser_create(m, SNN_OPTIMISER_ADAM, &o));
    float *x = malloc(sizeof(float) * in * (size_t)batch);
    int32_t labels[64];
    for (size_t i = 0; i < in * (size_t)batch; ++i) x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    for (int i = 0; i < batch; ++i) labels[i] = i % (int)out;
    CHECK(snn_set_inputs(f, x, in * (size_t)batch));
    CHECK(snn_set_labels(b, labels, (size_t)batch));
    double *times = malloc(sizeof(double) * (size_t)reps);
    for (int r = -reps / 10 - 3; r < reps; ++r) { /* the first ones warm up */
        if (r == 0) alloc_counter_start();
        const double t0 = now_us();
        CHECK(snn_forward(f, m));
        CHECK(snn_backprop(b, f, m, SNN_LOSS_LOGIT_CROSSENTROPY, NULL));
        CHECK(snn_optimiser_step(o, m, b));
        if (r >= 0) times[r] = now_us() - t0;
    }
    *allocations = (double)alloc_counter_stop() / reps;
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    const double median = times[reps / 2];
    free(times);
    free(x);
    snn_optimiser_destroy(o);
    snn_backward_cache_destroy(b);
    snn_forward_cache_destroy(f);
    snn_model_destroy(m);
    return median;
}

int main(int argc, char **argv) {
    const char *name = "resnet", *spec = FASHION_MNIST_RESNET_SPEC;
    int threads = 2, reps = 30;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--cpu-time") == 0) clock_used = CLOCK_PROCESS_CPUTIME_ID;
        else if (strcmp(argv[i], "--spec") == 0 && i + 1 < argc) name = spec = argv[++i];
        else if (strcmp(argv[i], "default") == 0) name = "default", spec = FASHION_MNIST_DEFAULT_SPEC;
        else if (strcmp(argv[i], "resnet") == 0) name = "resnet", spec = FASHION_MNIST_RESNET_SPEC;
        else {
            fprintf(stderr, "usage: %s [resnet | default | --spec SPEC] [--threads N] [--reps N] [--cpu-time]\n",
                    argv[0]);
            return 2;
        }
    }
    if (reps < 1 || threads < 1) return 2;
    int32_t native = 0;
    CHECK(snn_set_num_threads(threads));
    CHECK(snn_precision_support(SNN_DEVICE_CPU, SNN_PRECISION_BF16, &native));
    double a32 = 0.0, a16 = 0.0;
    const double f32 = run(spec, SNN_PRECISION_FLOAT32, reps, &a32);
    const double bf16 = run(spec, SNN_PRECISION_BF16, reps, &a16);
    printf("%s, %d thread%s, %s: float32 %.0f us (%.2f allocations), bf16%s %.0f us (%.2f allocations): %.2fx\n",
           name, threads, threads > 1 ? "s" : "", clock_used == CLOCK_MONOTONIC ? "wall" : "CPU time", f32, a32,
           native ? "" : " (emulated)", bf16, a16, f32 / bf16);
    return 0;
}

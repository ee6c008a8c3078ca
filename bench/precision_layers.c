/* One model at float32 and at bf16 in the same process, the two in
 * alternation, to compare the precisions layer shape by layer shape:
 *
 *   precision_layers SPEC [--batch N] [--forward] [--dx] [--reps N]
 *
 * Two forward caches of the model (and, for training, two backward caches),
 * one set to each precision; each repetition times a pass at float32 and
 * then one at bf16 (forward, or forward and backprop with a mean squared
 * error loss; no optimiser step; --dx: with the input gradient, which a
 * layer inside a model computes and a first layer does not). Prints the convolutions' choices as the
 * library logs them, then "float32 US bf16 US RATIO": the median
 * microseconds of a call at each precision and float32's over bf16's (above
 * 1, bf16 is faster). */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snn.h"
#include "bench_util.h"

static void print_choice(void *user, int32_t level, const char *message) {
    (void)user;
    if (level == SNN_LOG_INFO && strncmp(message, "conv ", 5) == 0) printf("# %s\n", message);
}

int main(int argc, char **argv) {
    const char *spec = NULL;
    int64_t batch = 64;
    int train = 1, reps = 50, dx = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) batch = atoll(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--forward") == 0) train = 0;
        else if (strcmp(argv[i], "--dx") == 0) dx = 1;
        else spec = argv[i];
    }
    if (!spec || batch < 1 || reps < 1) {
        fprintf(stderr, "usage: precision_layers SPEC [--batch N] [--forward] [--dx] [--reps N]\n");
        return 2;
    }
    CHECK(snn_set_log_callback(print_choice, NULL));
    snn_model *m = NULL;
    size_t in = 0, out = 0;
    CHECK(snn_model_create(spec, &m));
    CHECK(snn_model_input_size(m, &in));
    CHECK(snn_model_output_size(m, &out));
    float *x = malloc(sizeof(float) * in * (size_t)batch);
    float *t = malloc(sizeof(float) * out * (size_t)batch);
    for (size_t i = 0; i < in * (size_t)batch; ++i) x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    for (size_t i = 0; i < out * (size_t)batch; ++i) t[i] = (float)((i * 40503u) % 100) / 100.0f;
    const snn_precision precisions[2] = {SNN_PRECISION_FLOAT32, SNN_PRECISION_BF16};
    snn_forward_cache *f[2] = {NULL, NULL};
    snn_backward_cache *b[2] = {NULL, NULL};
    double *times[2];
    for (int k = 0; k < 2; ++k) {
        CHECK(snn_preallocate(m, batch, &f[k]));
        CHECK(snn_cache_set_precision(f[k], precisions[k]));
        CHECK(snn_set_inputs(f[k], x, in * (size_t)batch));
        if (train) {
            CHECK(snn_preallocate_grads(m, batch, &b[k]));
            CHECK(snn_set_targets(b[k], t, out * (size_t)batch));
            if (dx) CHECK(snn_set_input_gradient(b[k], 1));
        }
        times[k] = malloc(sizeof(double) * (size_t)reps);
    }
    for (int r = -reps / 10 - 3; r < reps; ++r) /* the first ones warm up */
        for (int k = 0; k < 2; ++k) {
            const double t0 = now_us();
            CHECK(snn_forward(f[k], m));
            if (train) CHECK(snn_backprop(b[k], f[k], m, SNN_LOSS_MSE, NULL));
            const double t1 = now_us();
            if (r >= 0) times[k][r] = t1 - t0;
        }
    double median[2];
    for (int k = 0; k < 2; ++k) {
        qsort(times[k], (size_t)reps, sizeof(double), cmp_double);
        median[k] = times[k][reps / 2];
    }
    printf("float32 %.2f bf16 %.2f %.3f\n", median[0], median[1], median[0] / median[1]);
    for (int k = 0; k < 2; ++k) {
        free(times[k]);
        snn_backward_cache_destroy(b[k]);
        snn_forward_cache_destroy(f[k]);
    }
    snn_set_log_callback(NULL, NULL);
    snn_model_destroy(m);
    free(x);
    free(t);
    return 0;
}

/* How the time to build and handle a model grows with its number of layers.
 * Two models of N layers after the input, every layer named:
 *
 *   chain     input 8; dense 8 relu name=l1; dense 8 relu name=l2; ...
 *   residual  input 8 name=r0; dense 8 relu; add r0 name=r1; dense 8 relu;
 *             add r1 name=r2; ...   (a residual link every second layer)
 *
 * One line per model and size:
 *
 *   model layers create_ms preallocate_ms describe_ms save_ms load_ms
 *
 * each the median over repetitions of snn_model_create, snn_preallocate and
 * snn_preallocate_grads (batch 1) together, snn_model_describe,
 * snn_model_save_to_buffer and snn_model_load_from_buffer.
 * Usage: model_scaling [--reps R] [N ...]   (default: --reps 5 1000 10000 100000)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "snn.h"
#include "bench_util.h"


enum { kSteps = 5, kMaxReps = 101 };
static const char *const step_names[kSteps] = {"create", "preallocate", "describe", "save", "load"};

static double now_ms(void) { return now_us() / 1e3; }

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The spec of `layers` layers after the input (see the top of this file). */
static char *make_spec(int residual, long layers) {
    const size_t capacity = 64 + (size_t)layers * 40;
    char *s = malloc(capacity);
    if (!s) exit(1);
    size_t len = (size_t)snprintf(s, capacity, residual ? "input 8 name=r0" : "input 8");
    for (long i = 1; i <= layers; ++i) {
        if (!residual)
            len += (size_t)snprintf(s + len, capacity - len, "; dense 8 relu name=l%ld", i);
        else if (i % 2)
            len += (size_t)snprintf(s + len, capacity - len, "; dense 8 relu");
        else
            len += (size_t)snprintf(s + len, capacity - len, "; add r%ld name=r%ld", i / 2 - 1, i / 2);
    }
    return s;
}

/* Times each step once; t[k] receives step k's milliseconds. */
static void run_once(const char *spec, double *t) {
    snn_model *model = NULL, *loaded = NULL;
    snn_forward_cache *fwd = NULL;
    snn_backward_cache *bwd = NULL;
    double t0 = now_ms();
    CHECK(snn_model_create(spec, &model));
    t[0] = now_ms() - t0;

    t0 = now_ms();
    CHECK(snn_preallocate(model, 1, &fwd));
    CHECK(snn_preallocate_grads(model, 1, &bwd));
    t[1] = now_ms() - t0;

    size_t length = 0;
    CHECK(snn_model_describe(model, NULL, 0, &length));
    char *text = malloc(length + 1);
    if (!text) exit(1);
    t0 = now_ms();
    CHECK(snn_model_describe(model, text, length + 1, &length));
    t[2] = now_ms() - t0;

    size_t size = 0;
    CHECK(snn_model_save_to_buffer(model, NULL, 0, &size));
    unsigned char *file = malloc(size);
    if (!file) exit(1);
    t0 = now_ms();
    CHECK(snn_model_save_to_buffer(model, file, size, &size));
    t[3] = now_ms() - t0;

    t0 = now_ms();
    CHECK(snn_model_load_from_buffer(file, size, &loaded));
    t[4] = now_ms() - t0;

    free(file);
    free(text);
    snn_model_destroy(loaded);
    snn_backward_cache_destroy(bwd);
    snn_forward_cache_destroy(fwd);
    snn_model_destroy(model);
}

int main(int argc, char **argv) {
    int reps = 5;
    long sizes[32];
    int n_sizes = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
            if (reps < 1 || reps > kMaxReps) {
                fprintf(stderr, "--reps must be in [1, %d]\n", kMaxReps);
                return 2;
            }
        } else if (n_sizes < 32 && atol(argv[i]) > 0) {
            sizes[n_sizes++] = atol(argv[i]);
        } else {
            fprintf(stderr, "usage: model_scaling [--reps R] [N ...]\n");
            return 2;
        }
    }
    if (n_sizes == 0) {
        sizes[0] = 1000, sizes[1] = 10000, sizes[2] = 100000;
        n_sizes = 3;
    }
    printf("%-9s %7s", "model", "layers");
    for (int k = 0; k < kSteps; ++k) printf(" %11s_ms", step_names[k]);
    printf("\n");
    for (int residual = 0; residual < 2; ++residual)
        for (int s = 0; s < n_sizes; ++s) {
            char *spec = make_spec(residual, sizes[s]);
            double times[kSteps][kMaxReps], t[kSteps];
            for (int r = 0; r < reps; ++r) {
                run_once(spec, t);
                for (int k = 0; k < kSteps; ++k) times[k][r] = t[k];
            }
            printf("%-9s %7ld", residual ? "residual" : "chain", sizes[s]);
            for (int k = 0; k < kSteps; ++k) printf(" %14.2f", median(times[k], reps));
            printf("\n");
            fflush(stdout);
            free(spec);
        }
    return 0;
}

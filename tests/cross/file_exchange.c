/* Model files move between platforms bit for bit (tests/cross).
 *
 *   file_exchange write DIR   builds a small model from a fixed seed, trains
 *                             it a few steps on fixed data and writes every
 *                             file snn saves: model.snn (snn_model_save),
 *                             checkpoint.snn (snn_checkpoint_save),
 *                             checkpoint_v2.snn (snn_checkpoint_save_v2, with
 *                             loss scaling), model.onnx
 *                             (snn_model_export_onnx), and outputs.bin: the
 *                             trained model's outputs on fixed inputs (raw
 *                             little-endian floats).
 *   file_exchange read DIR    loads each of those files (written here or on
 *                             another platform), runs it on the same inputs
 *                             and compares its outputs with outputs.bin bit
 *                             for bit; saving each loaded model again gives
 *                             the same bytes as its file.
 *
 * Only snn.h. Exit status 0 when everything matched. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snn.h"

#define SPEC "input 6x6x2; conv 3 4 pad=1 relu; batchnorm; maxpool 2; flatten; dense 8 gelu; layernorm; dense 3"
enum { BATCH = 4, IN = 6 * 6 * 2, OUT = 3, STEPS = 5 };

static int failures = 0;

#define CHECK(call)                                                                   \
    do {                                                                              \
        snn_status status_ = (call);                                                  \
        if (status_ != SNN_OK) {                                                      \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,      \
                    snn_last_error());                                                \
            exit(2);                                                                  \
        }                                                                             \
    } while (0)

/* Exact floats from integers: the same values on every platform. */
static void fill(float *v, size_t n, uint32_t seed) {
    uint32_t s = seed;
    for (size_t i = 0; i < n; ++i) {
        s = s * 1664525u + 1013904223u;
        v[i] = (float)((int32_t)(s >> 20) - 2048) / 1024.0f;
    }
}

static void path_of(char *out, size_t size, const char *dir, const char *name) {
    snprintf(out, size, "%s/%s", dir, name);
}

static void outputs_of(const snn_model *model, const float *x, float *y) {
    snn_forward_cache *fwd = NULL;
    CHECK(snn_preallocate(model, BATCH, &fwd));
    CHECK(snn_cache_set_training(fwd, 0));  /* inference: batchnorm's running statistics stay */
    CHECK(snn_set_inputs(fwd, x, (size_t)BATCH * IN));
    CHECK(snn_forward(fwd, model));
    CHECK(snn_get_outputs(fwd, y, (size_t)BATCH * OUT));
    snn_forward_cache_destroy(fwd);
}

/* Little-endian bytes of floats, whatever the machine's order. */
static void float_bytes(const float *v, size_t n, unsigned char *out) {
    for (size_t i = 0; i < n; ++i) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        for (int b = 0; b < 4; ++b) out[4 * i + (size_t)b] = (unsigned char)(u >> (8 * b));
    }
}

static unsigned char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc(n > 0 ? (size_t)n : 1);
    if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    *size = (size_t)n;
    return data;
}

static int write_mode(const char *dir) {
    snn_model *model = NULL;
    CHECK(snn_model_create(SPEC, &model));
    CHECK(snn_model_init(model, 20240601));
    snn_forward_cache *fwd = NULL;
    snn_backward_cache *bwd = NULL;
    snn_optimiser *adam = NULL;
    CHECK(snn_preallocate(model, BATCH, &fwd));
    CHECK(snn_preallocate_grads(model, BATCH, &bwd));
    CHECK(snn_optimiser_create(model, SNN_OPTIMISER_ADAM, &adam));
    CHECK(snn_optimiser_set(adam, SNN_HP_LEARNING_RATE, 0.01));
    CHECK(snn_set_loss_scaling(bwd, 1));
    static float x[BATCH * IN], t[BATCH * OUT];
    for (int step = 0; step < STEPS; ++step) {
        float loss = 0.0f;
        fill(x, BATCH * IN, 1u + (uint32_t)step);
        fill(t, BATCH * OUT, 100u + (uint32_t)step);
        CHECK(snn_set_inputs(fwd, x, BATCH * IN));
        CHECK(snn_set_targets(bwd, t, BATCH * OUT));
        CHECK(snn_forward(fwd, model));
        CHECK(snn_backprop(bwd, fwd, model, SNN_LOSS_MSE, &loss));
        CHECK(snn_optimiser_step(adam, model, bwd));
        printf("step %d loss %.9g\n", step + 1, loss);
    }
    char path[4096];
    path_of(path, sizeof path, dir, "model.snn");
    CHECK(snn_model_save(model, path));
    path_of(path, sizeof path, dir, "checkpoint.snn");
    CHECK(snn_checkpoint_save(model, adam, path));
    path_of(path, sizeof path, dir, "checkpoint_v2.snn");
    CHECK(snn_checkpoint_save_v2(model, adam, bwd, path));
    path_of(path, sizeof path, dir, "model.onnx");
    CHECK(snn_model_export_onnx(model, NULL, path));

    static float y[BATCH * OUT];
    static unsigned char bytes[BATCH * OUT * 4];
    fill(x, BATCH * IN, 999u);
    outputs_of(model, x, y);
    float_bytes(y, BATCH * OUT, bytes);
    path_of(path, sizeof path, dir, "outputs.bin");
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, sizeof bytes, f) != sizeof bytes || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        return 2;
    }
    snn_optimiser_destroy(adam);
    snn_backward_cache_destroy(bwd);
    snn_forward_cache_destroy(fwd);
    snn_model_destroy(model);
    printf("wrote model.snn, checkpoint.snn, checkpoint_v2.snn, model.onnx, outputs.bin in %s\n", dir);
    return 0;
}

/* The model's outputs against outputs.bin, and the bytes it saves again
 * against its file (save: snn_model_save_to_buffer or ONNX export to a
 * buffer). */
static void check_model(const char *what, const snn_model *model, const unsigned char *want,
                        const unsigned char *file, size_t file_size, int onnx) {
    static float x[BATCH * IN], y[BATCH * OUT];
    static unsigned char got[BATCH * OUT * 4];
    fill(x, BATCH * IN, 999u);
    outputs_of(model, x, y);
    float_bytes(y, BATCH * OUT, got);
    if (memcmp(got, want, sizeof got) != 0) {
        fprintf(stderr, "FAIL %s: outputs differ from outputs.bin\n", what);
        for (int i = 0; i < BATCH * OUT; ++i) {
            float w;
            uint32_t u = (uint32_t)want[4 * i] | (uint32_t)want[4 * i + 1] << 8 | (uint32_t)want[4 * i + 2] << 16 |
                         (uint32_t)want[4 * i + 3] << 24;
            memcpy(&w, &u, 4);
            fprintf(stderr, "  [%d] %.9g, file's %.9g\n", i, y[i], w);
        }
        failures++;
    } else {
        printf("ok %s: outputs equal outputs.bin bit for bit\n", what);
    }
    if (!file) return;
    size_t size = 0;
    if (onnx)
        CHECK(snn_model_export_onnx_to_buffer(model, NULL, NULL, 0, &size));
    else
        CHECK(snn_model_save_to_buffer(model, NULL, 0, &size));
    unsigned char *again = malloc(size ? size : 1);
    if (onnx)
        CHECK(snn_model_export_onnx_to_buffer(model, NULL, again, size, &size));
    else
        CHECK(snn_model_save_to_buffer(model, again, size, &size));
    if (size != file_size || memcmp(again, file, size) != 0) {
        fprintf(stderr, "FAIL %s: saved again, %zu bytes differ from the file's %zu\n", what, size, file_size);
        failures++;
    } else {
        printf("ok %s: saved again, the same %zu bytes\n", what, size);
    }
    free(again);
}

static int read_mode(const char *dir) {
    char path[4096];
    size_t n = 0, size = 0;
    path_of(path, sizeof path, dir, "outputs.bin");
    unsigned char *want = read_file(path, &n);
    if (n != (size_t)BATCH * OUT * 4) {
        fprintf(stderr, "%s: %zu bytes, want %d\n", path, n, BATCH * OUT * 4);
        return 2;
    }

    snn_model *model = NULL;
    path_of(path, sizeof path, dir, "model.snn");
    unsigned char *file = read_file(path, &size);
    CHECK(snn_model_load(path, &model));
    check_model("model.snn", model, want, file, size, 0);
    snn_model_destroy(model);
    free(file);

    const char *checkpoints[] = {"checkpoint.snn", "checkpoint_v2.snn"};
    for (int i = 0; i < 2; ++i) {
        snn_optimiser *opt = NULL;
        int64_t steps = 0;
        path_of(path, sizeof path, dir, checkpoints[i]);
        CHECK(snn_checkpoint_load(path, &model, &opt));
        CHECK(snn_optimiser_step_count(opt, &steps));
        if (steps != STEPS) {
            fprintf(stderr, "FAIL %s: %lld optimiser steps, want %d\n", checkpoints[i], (long long)steps, STEPS);
            failures++;
        }
        check_model(checkpoints[i], model, want, NULL, 0, 0);
        snn_optimiser_destroy(opt);
        snn_model_destroy(model);
    }

    path_of(path, sizeof path, dir, "model.onnx");
    file = read_file(path, &size);
    CHECK(snn_model_import_onnx(path, NULL, &model));
    check_model("model.onnx", model, want, file, size, 1);
    snn_model_destroy(model);
    free(file);
    free(want);
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "write") == 0) return write_mode(argv[2]);
    if (argc == 3 && strcmp(argv[1], "read") == 0) return read_mode(argv[2]);
    fprintf(stderr, "usage: file_exchange write|read DIR\n");
    return 2;
}

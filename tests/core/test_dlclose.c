/* A host that loads and unloads libsnn at run time (plugins, Mono, Julia's
 * Libdl): 100 cycles of dlopen, a forward pass with 2 threads, destroying
 * everything and dlclose must neither crash (a pool thread running code that
 * was unmapped) nor start a new set of pool threads per load. The library's
 * path is the first argument. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snn.h"
#include "thread_count.h"

static int failures = 0;
#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);   \
            ++failures;                                                                \
        }                                                                              \
    } while (0)

enum { CYCLES = 100, BATCH = 16, INPUTS = 256, OUTPUTS = 10 };
/* Large enough for its matrix products to be split over both threads. */
static const char *kSpec = "input 256; dense 256 relu; dense 10";

/* The functions one cycle uses, resolved from the loaded library. */
struct api {
    snn_status (*set_num_threads)(int32_t);
    snn_status (*model_create)(const char *, snn_model **);
    void (*model_destroy)(snn_model *);
    snn_status (*preallocate)(const snn_model *, int64_t, snn_forward_cache **);
    void (*forward_cache_destroy)(snn_forward_cache *);
    snn_status (*set_inputs)(snn_forward_cache *, const float *, size_t);
    snn_status (*forward)(snn_forward_cache *, const snn_model *);
    snn_status (*get_outputs)(const snn_forward_cache *, float *, size_t);
};

static int resolve(void *lib, struct api *a) {
    /* A cast through a union: ISO C has no conversion from void * to a
     * function pointer. */
#define RESOLVE(field, name)                                 \
    do {                                                     \
        union {                                              \
            void *object;                                    \
            __typeof__(a->field) function;                   \
        } u;                                                 \
        u.object = dlsym(lib, name);                         \
        if (u.object == NULL) return 0;                      \
        a->field = u.function;                               \
    } while (0)
    RESOLVE(set_num_threads, "snn_set_num_threads");
    RESOLVE(model_create, "snn_model_create");
    RESOLVE(model_destroy, "snn_model_destroy");
    RESOLVE(preallocate, "snn_preallocate");
    RESOLVE(forward_cache_destroy, "snn_forward_cache_destroy");
    RESOLVE(set_inputs, "snn_set_inputs");
    RESOLVE(forward, "snn_forward");
    RESOLVE(get_outputs, "snn_get_outputs");
#undef RESOLVE
    return 1;
}

/* One load, forward pass and unload; the outputs go to out. */
static int cycle(const char *path, float *out) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 0;
    }
    struct api a;
    memset(&a, 0, sizeof a);
    int ok = resolve(lib, &a);
    snn_model *model = NULL;
    snn_forward_cache *cache = NULL;
    static float inputs[BATCH * INPUTS];
    for (int i = 0; i < BATCH * INPUTS; ++i) inputs[i] = (float)(i % 13) / 6.0f - 1.0f;
    ok = ok && a.set_num_threads(2) == SNN_OK && a.model_create(kSpec, &model) == SNN_OK &&
         a.preallocate(model, BATCH, &cache) == SNN_OK &&
         a.set_inputs(cache, inputs, BATCH * INPUTS) == SNN_OK && a.forward(cache, model) == SNN_OK &&
         a.get_outputs(cache, out, BATCH * OUTPUTS) == SNN_OK;
    if (cache) a.forward_cache_destroy(cache);
    if (model) a.model_destroy(model);
    CHECK(dlclose(lib) == 0);
    return ok;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s path/to/libsnn.so\n", argv[0]);
        return 2;
    }
    float first[BATCH * OUTPUTS], out[BATCH * OUTPUTS];
    CHECK(cycle(argv[1], first));
    const int after_first = thread_count();
    CHECK(after_first >= 1);
    int most = after_first;
    for (int i = 1; i < CYCLES; ++i) {
        memset(out, 0, sizeof out);
        if (!cycle(argv[1], out)) {
            CHECK(!"cycle failed");
            break;
        }
        CHECK(memcmp(out, first, sizeof out) == 0);
        const int now = thread_count();
        if (now > most) most = now;
    }
    /* Every load after the first reuses the pool threads of the first. */
    CHECK(most == after_first);
    if (most != after_first)
        fprintf(stderr, "threads: %d after the first cycle, up to %d later\n", after_first, most);
    printf("%s\n", failures ? "FAILED" : "100 load/unload cycles, no new threads");
    return failures ? 1 : 0;
}

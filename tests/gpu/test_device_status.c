/* What a program sees about GPUs on any machine, GPU or not. One mode per
 * process, since libsnn loads the plugin once per process:
 *
 *   test_device_status plugin-symbol PATH   PATH is a loadable snn CUDA plugin
 *   test_device_status status               snn_gpu_count, snn_gpu_status and
 *                                           snn_to_gpu agree, with a precise
 *                                           status when there is no GPU
 *   test_device_status missing-plugin PATH  run with SNN_CUDA_PLUGIN=PATH, a
 *                                           file that does not exist
 *   test_device_status skip-unless-gpu      exits 0 when GPU 0 can be used, 77
 *                                           (skip) or 1 as every GPU test
 *                                           would (gpu_skip.h), for scripts
 *
 * Compiled as C99: it uses only the public header. */
#include <snn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_skip.h"

/* The loader's calls, and the names of the plugin and of the CUDA driver's
 * library, on each system. */
#ifdef _WIN32
#include <windows.h>
static void *open_library(const char *path) { return (void *)LoadLibraryA(path); }
static int has_symbol(void *handle, const char *name) { return GetProcAddress((HMODULE)handle, name) != NULL; }
static void close_library(void *handle) { FreeLibrary((HMODULE)handle); }
static const char *load_error(void) { return "LoadLibrary failed"; }
static const char *const kPluginFile = "snn_cuda.dll";
static const char *const kDriverFile = "nvcuda.dll";
#else
#include <dlfcn.h>
static void *open_library(const char *path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }
static int has_symbol(void *handle, const char *name) { return dlsym(handle, name) != NULL; }
static void close_library(void *handle) { dlclose(handle); }
static const char *load_error(void) { return dlerror(); }
static const char *const kPluginFile = "libsnn_cuda.so";
static const char *const kDriverFile = "libcuda.so.1";
#endif

static int failures = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                              \
        }                                                                            \
    } while (0)

static const char *kSpec = "input 4; dense 3 relu; dense 2";

static int32_t device_of(const snn_model *m) {
    int32_t d = -2;
    CHECK(snn_model_device(m, &d) == SNN_OK);
    return d;
}

/* The plugin exports its entry point (found the way libsnn finds it). */
static void plugin_symbol(const char *path) {
    void *handle = open_library(path);
    if (handle == NULL) {
        fprintf(stderr, "loading %s: %s\n", path, load_error());
        ++failures;
        return;
    }
    CHECK(has_symbol(handle, "snn_cuda_plugin_init"));
    /* Nothing else leaks out of the plugin: its CUDA runtime is private. */
    CHECK(!has_symbol(handle, "cudaMalloc"));
}

/* Whether this build made the plugin (told by the test's environment). */
static int plugin_built(void) {
    const char *v = getenv("SNN_TEST_HAVE_PLUGIN");
    return v != NULL && strcmp(v, "1") == 0;
}

/* Whether the CUDA driver library can be loaded at all. */
static int driver_present(void) {
    void *driver = open_library(kDriverFile);
    if (driver == NULL) return 0;
    close_library(driver);
    return 1;
}

static void status(void) {
    snn_model *m = NULL;
    int32_t count = snn_gpu_count();
    snn_status st;
    char why[512];
    CHECK(snn_model_create(kSpec, &m) == SNN_OK);
    if (m == NULL) return;

    if (count > 0) {
        /* A GPU machine: the first GPU works, both ways. */
        CHECK(snn_gpu_status(0) == SNN_OK);
        CHECK(snn_to_gpu(m, 0) == SNN_OK);
        CHECK(device_of(m) == 0);
        CHECK(snn_to_cpu(m) == SNN_OK);
        CHECK(snn_gpu_status(count) == SNN_ERR_GPU_INDEX);
        printf("%d GPU(s) visible\n", count);
        snn_model_destroy(m);
        return;
    }

    st = snn_to_gpu(m, 0);
    /* The message lives only until the next snn_* call. */
    snprintf(why, sizeof why, "%s", snn_last_error());
    printf("snn_to_gpu: %s: %s\n", snn_status_string(st), why);
    CHECK(snn_gpu_status(0) == st);
    if (!plugin_built()) {
        /* A build without the plugin. */
        CHECK(st == SNN_ERR_GPU_PLUGIN_NOT_FOUND);
        CHECK(strstr(why, kPluginFile) != NULL);
    } else if (!driver_present()) {
        /* The plugin loads but the CUDA driver (libcuda.so) is absent. */
        CHECK(st == SNN_ERR_GPU_DRIVER);
        CHECK(strstr(why, "driver") != NULL);
    } else {
        /* A driver without a usable device, or one too old for the runtime. */
        CHECK(st == SNN_ERR_NO_GPU || st == SNN_ERR_GPU_DRIVER);
        CHECK(strstr(why, st == SNN_ERR_NO_GPU ? "no GPU" : "driver") != NULL);
    }
    /* The model stays on the CPU and keeps working there. */
    CHECK(device_of(m) == SNN_DEVICE_CPU);
    {
        snn_forward_cache *f = NULL;
        const float x[4] = {1.0f, -1.0f, 0.5f, 0.0f};
        float y[2];
        CHECK(snn_preallocate(m, 1, &f) == SNN_OK);
        CHECK(snn_set_inputs(f, x, 4) == SNN_OK);
        CHECK(snn_forward(f, m) == SNN_OK);
        CHECK(snn_get_outputs(f, y, 2) == SNN_OK);
        snn_forward_cache_destroy(f);
    }
    {
        int32_t where = -2;
        CHECK(snn_to_best_device(m, &where) == SNN_OK);
        CHECK(where == SNN_DEVICE_CPU);
    }
    {
        /* A data set on a GPU fails with the same status. */
        snn_dataset *ds = NULL;
        const float samples[4] = {0};
        CHECK(snn_dataset_create(0, samples, 1, 4, NULL, &ds) == st);
        CHECK(ds == NULL);
    }
    snn_model_destroy(m);
}

static void missing_plugin(const char *path) {
    snn_model *m = NULL;
    const char *env = getenv("SNN_CUDA_PLUGIN");
    snn_status st;
    CHECK(env != NULL && strcmp(env, path) == 0);
    CHECK(snn_gpu_count() == 0);
    CHECK(snn_gpu_status(0) == SNN_ERR_GPU_PLUGIN_NOT_FOUND);
    CHECK(snn_model_create(kSpec, &m) == SNN_OK);
    if (m == NULL) return;
    st = snn_to_gpu(m, 0);
    printf("snn_to_gpu: %s: %s\n", snn_status_string(st), snn_last_error());
    CHECK(st == SNN_ERR_GPU_PLUGIN_NOT_FOUND);
    CHECK(strstr(snn_last_error(), path) != NULL);
    CHECK(device_of(m) == SNN_DEVICE_CPU);
    snn_model_destroy(m);
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "plugin-symbol") == 0)
        plugin_symbol(argv[2]);
    else if (argc >= 2 && strcmp(argv[1], "status") == 0)
        status();
    else if (argc >= 3 && strcmp(argv[1], "missing-plugin") == 0)
        missing_plugin(argv[2]);
    else if (argc >= 2 && strcmp(argv[1], "skip-unless-gpu") == 0)
        gpu_skip_unless_gpu();
    else {
        fprintf(stderr,
                "usage: %s plugin-symbol PATH | status | missing-plugin PATH | skip-unless-gpu\n",
                argv[0]);
        return 2;
    }
    printf("%s: %s\n", argv[1], failures == 0 ? "all checks passed" : "checks failed");
    return failures == 0 ? 0 : 1;
}

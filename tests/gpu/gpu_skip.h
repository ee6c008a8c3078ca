/* When a GPU test may skip: the one rule of every program of the gpu suite,
 * C (C99) and C++ alike.
 *
 * A test skips (exit status 77, Meson's "skipped") only when
 * snn_gpu_count() is 0 AND snn_gpu_status(0) names why: a missing plugin,
 * driver or device, with a message, which the test prints. Anything else
 * about a machine without a usable GPU 0 (no reason given, or the two calls
 * disagreeing) is a bug in the library, and the test fails (exit status 1)
 * instead of hiding it as a skip. */
#ifndef SNN_TESTS_GPU_SKIP_H
#define SNN_TESTS_GPU_SKIP_H

#include <snn.h>
#include <stdio.h>
#include <stdlib.h>

/* Returns when GPU 0 can be used; otherwise exits with 77 or 1 as above. */
static inline void gpu_skip_unless_gpu(void) {
    const int32_t count = snn_gpu_count();
    const snn_status st = snn_gpu_status(0);
    const char *why = st == SNN_OK ? "" : snn_last_error();
    const int named = (st == SNN_ERR_GPU_PLUGIN_NOT_FOUND || st == SNN_ERR_GPU_DRIVER ||
                       st == SNN_ERR_NO_GPU) &&
                      why[0] != '\0';
    if (count > 0 && st == SNN_OK) return;
    if (count == 0 && named) {
        printf("skipped: no usable GPU (%s: %s)\n", snn_status_string(st), why);
        exit(77);
    }
    fprintf(stderr,
            "snn_gpu_count() is %d but snn_gpu_status(0) returned %d (%s) with the message "
            "\"%s\": a test skips only when no GPU is counted and the status names a missing "
            "plugin, driver or device\n",
            (int)count, (int)st, snn_status_string(st), why);
    exit(1);
}

#endif

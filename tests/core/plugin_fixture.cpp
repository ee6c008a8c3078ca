// A stand-in for libsnn_cuda.so: exports the plugin's init function and
// refuses with SNN_ERR_NO_GPU and a message of its own, so a program can
// tell that it was this file that snn found and loaded.
#include <stddef.h>

#include <cstdio>

#include "snn.h"

extern "C" __attribute__((visibility("default"))) snn_status snn_cuda_plugin_init(const void *, void **, char *msg,
                                                                                  size_t capacity) {
    std::snprintf(msg, capacity, "the plugin lookup fixture was loaded");
    return SNN_ERR_NO_GPU;
}

// Fuzz target: the model file loader on arbitrary bytes, from memory
// (snn_model_load_from_buffer) and from a file (snn_model_load and
// snn_checkpoint_load on an in-memory file). Properties checked besides
// "never crashes": no SNN_ERR_INTERNAL; both loaders give the same status; a
// valid checkpoint is a valid model file; a buffer that loads saves and loads
// again to bit-identical parameters.
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "snn.h"

#include "fuzz_options.h"
#include "fuzz_target.h"

namespace {

std::vector<float> params_of(const snn_model *m) {
    size_t n = 0;
    snn_parameter_count(m, &n);
    std::vector<float> p(n);
    if (n != 0 && snn_get_parameters(m, p.data(), n) != SNN_OK) abort();
    return p;
}

// The bytes as a regular file only this process sees, named by its
// /proc/self/fd path; -1 when the system has no memfd_create.
int memory_file(const uint8_t *data, size_t size, std::string *path) {
    const int fd = memfd_create("fuzz_model", MFD_CLOEXEC);
    if (fd < 0) return -1;
    for (size_t done = 0; done < size;) {
        const ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) abort();
        done += size_t(w);
    }
    *path = "/proc/self/fd/" + std::to_string(fd);
    return fd;
}

// Loads from the file the path names; a status different from the buffer's
// is a finding.
void load_from_file(const std::string &path, snn_status buffer_status) {
    snn_model *m = nullptr;
    const snn_status file_status = fuzz_check(snn_model_load(path.c_str(), &m));
    if (file_status != buffer_status) {
        fprintf(stderr, "snn_model_load gave %d, snn_model_load_from_buffer %d: %s\n", file_status,
                buffer_status, snn_last_error());
        abort();
    }
    snn_model_destroy(m);
    snn_optimiser *o = nullptr;
    if (fuzz_check(snn_checkpoint_load(path.c_str(), &m, &o)) == SNN_OK) {
        if (buffer_status != SNN_OK) abort();
        snn_optimiser_destroy(o);
        snn_model_destroy(m);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    snn_model *m = nullptr;
    fuzz_last_status = fuzz_check(snn_model_load_from_buffer(data, size, &m));
    std::string path;
    const int fd = memory_file(data, size, &path);
    if (fd >= 0) {
        load_from_file(path, fuzz_last_status);
        close(fd);
    }
    if (fuzz_last_status != SNN_OK) return 0;
    size_t bytes = 0;
    if (snn_model_save_to_buffer(m, nullptr, 0, &bytes) != SNN_OK) abort();
    std::vector<unsigned char> saved(bytes);
    if (snn_model_save_to_buffer(m, saved.data(), saved.size(), &bytes) != SNN_OK) abort();
    snn_model *again = nullptr;
    if (snn_model_load_from_buffer(saved.data(), saved.size(), &again) != SNN_OK) abort();
    const std::vector<float> a = params_of(m), b = params_of(again);
    if (a.size() != b.size() || (!a.empty() && memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0))
        abort();
    snn_model_destroy(again);
    snn_model_destroy(m);
    return 0;
}

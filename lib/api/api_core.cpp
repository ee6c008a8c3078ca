// Version, status text, errors, settings, devices.
#include <cmath>
#include <cstring>
#include <string>

#include "api/guard.h"
#include "common/log.h"
#include "cpu/kernel_choice.h"
#include "device/devices.h"

namespace snn {
namespace {
thread_local std::string t_last_error;

// Length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF) that starts at s[i], or 0.
size_t utf8_sequence_length(const std::string &s, size_t i) {
    const auto byte = [&](size_t k) { return k < s.size() ? (unsigned char)s[k] : 0u; };
    const unsigned lead = byte(i);
    if (lead < 0x80) return 1;
    size_t length;
    unsigned low = 0x80, high = 0xBF;  // the range of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0) low = 0xA0;
        if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0) low = 0x90;
        if (lead == 0xF4) high = 0x8F;
    } else {
        return 0;
    }
    if (byte(i + 1) < low || byte(i + 1) > high) return 0;
    for (size_t k = 2; k < length; ++k)
        if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
    return length;
}

// s with every byte that does not start a well-formed UTF-8 sequence written
// as \xNN: messages quote specs and files, which may hold any bytes.
std::string escape_invalid_utf8(const std::string &s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const size_t length = utf8_sequence_length(s, i);
        if (length == 0) {
            out += format("\\x%02x", unsigned((unsigned char)s[i]));
            ++i;
        } else {
            out.append(s, i, length);
            i += length;
        }
    }
    return out;
}
}  // namespace

snn_status record_error(const char *function, snn_status status, const char *message) {
    try {
        t_last_error = escape_invalid_utf8(std::string(function) + ": " + message);
    } catch (...) {
        // Out of memory while formatting: keep the status, lose the text.
        t_last_error.clear();
    }
    return status;
}

void log_last_error() noexcept { log_message(SNN_LOG_ERROR, t_last_error.c_str()); }

void check_max_batch(int64_t max_batch) {
    if (max_batch < 1 || max_batch > (int64_t(1) << 31))
        fail(SNN_ERR_BATCH, "max_batch must be in [1, 2^31], got %lld", (long long)max_batch);
}

void check_batch_n(size_t n, int64_t max_batch) {
    if (n == 0 || n > size_t(max_batch))
        fail(SNN_ERR_BATCH, "batch %zu is outside [1, %lld] (the cache's max_batch)", n,
             (long long)max_batch);
}

void check_indices(const int64_t *indices, size_t n, size_t sample_count) {
    for (size_t i = 0; i < n; ++i)
        if (indices[i] < 0 || uint64_t(indices[i]) >= sample_count)
            fail(SNN_ERR_INVALID_ARGUMENT, "indices[%zu] = %lld is outside [0, %zu)", i,
                 (long long)indices[i], sample_count);
}

std::string device_name(int32_t device) {
    return device == SNN_DEVICE_CPU ? std::string("the CPU") : format("GPU %d", device);
}

}  // namespace snn

using namespace snn;

extern "C" {

SNN_API int32_t snn_version_number(void) { return SNN_VERSION_NUMBER; }
SNN_API const char *snn_version_string(void) { return SNN_VERSION_STRING; }

SNN_API const char *snn_build_features(void) {
    return "cpu"
#ifdef SNN_HAVE_OPENBLAS
           " openblas"
#endif
           " safetensors"
#ifdef SNN_HAVE_ONNX
           " onnx"
#endif
#ifdef SNN_HAVE_CUDA_PLUGIN
           " cuda-plugin"
#endif
        ;
}

SNN_API int32_t snn_has_feature(const char *feature) {
    if (feature == nullptr || *feature == '\0') return 0;
    const char *all = snn_build_features();
    size_t n = std::strlen(feature);
    for (const char *p = all; (p = std::strstr(p, feature)) != nullptr; p += n) {
        bool start = p == all || p[-1] == ' ';
        bool end = p[n] == '\0' || p[n] == ' ';
        if (start && end) return 1;
    }
    return 0;
}

SNN_API const char *snn_status_string(snn_status status) {
    switch (status) {
        case SNN_OK: return "success";
        case SNN_ERR_NULL_ARGUMENT: return "a required pointer or handle is NULL";
        case SNN_ERR_INVALID_ARGUMENT: return "an argument is out of its valid range";
        case SNN_ERR_SPEC: return "the model spec does not parse";
        case SNN_ERR_SHAPE: return "a layer does not fit its input";
        case SNN_ERR_COUNT: return "a buffer has the wrong number of elements";
        case SNN_ERR_BATCH: return "batch size is zero or above the preallocated maximum";
        case SNN_ERR_LABEL: return "a class label is out of range";
        case SNN_ERR_MODEL_MISMATCH: return "a cache or optimiser was made for another model";
        case SNN_ERR_DEVICE_MISMATCH: return "handles or buffers are on different devices";
        case SNN_ERR_STATE: return "call out of order";
        case SNN_ERR_OUT_OF_MEMORY: return "out of memory";
        case SNN_ERR_NOT_FINITE: return "a NaN or Inf was found";
        case SNN_ERR_IO: return "a file could not be read or written";
        case SNN_ERR_FILE_FORMAT: return "a file or buffer is malformed";
        case SNN_ERR_UNSUPPORTED: return "not supported on this device or build";
#ifdef _WIN32
        case SNN_ERR_GPU_PLUGIN_NOT_FOUND: return "the CUDA plugin snn_cuda.dll was not found";
#else
        case SNN_ERR_GPU_PLUGIN_NOT_FOUND: return "the CUDA plugin libsnn_cuda.so was not found";
#endif
        case SNN_ERR_GPU_DRIVER: return "the CUDA driver or runtime is missing or too old";
        case SNN_ERR_NO_GPU: return "no CUDA device is visible";
        case SNN_ERR_GPU_INDEX: return "GPU index out of range";
        case SNN_ERR_CUDA: return "a CUDA, cuBLAS or cuDNN call failed";
        case SNN_ERR_INTERNAL: return "internal error in snn";
        case SNN_ERR_TOKEN: return "token id outside the vocabulary";
        default: return "unknown status";
    }
}

SNN_API const char *snn_last_error(void) { return t_last_error.c_str(); }

SNN_API snn_status snn_set_check_finite(int32_t on) {
    set_check_finite(on != 0);
    return SNN_OK;
}

SNN_API snn_status snn_set_allow_tf32(int32_t on) {
    set_allow_tf32(on != 0);
    return SNN_OK;
}

SNN_API int32_t snn_get_num_threads(void) { return threads(); }

SNN_API snn_status snn_set_num_threads(int32_t n) {
    return guarded(__func__, [&] {
        if (n < 1) fail(SNN_ERR_INVALID_ARGUMENT, "n must be >= 1, got %d", n);
        set_threads(n);
    });
}

SNN_API snn_status snn_set_cpu_isa(const char *level) {
    return guarded(__func__, [&] {
        if (level == nullptr) {
            cpu_cap_isa_from_environment();
            return;
        }
        CpuIsa isa;
        if (!cpu_isa_from_name(level, &isa))
            fail(SNN_ERR_INVALID_ARGUMENT, "level must be portable, avx2, avx512 or avx512_bf16, got '%s'", level);
        cpu_cap_isa(isa);
    });
}

SNN_API const char *snn_cpu_isa(void) { return cpu_isa_in_force(); }

SNN_API int32_t snn_gpu_count(void) { return gpu_count(); }

SNN_API snn_status snn_gpu_status(int32_t device) {
    return guarded(__func__, [&] {
        if (device < 0) fail(SNN_ERR_GPU_INDEX, "device must be a GPU index >= 0, got %d", device);
        backend_for(device);
    });
}

SNN_API snn_status snn_to_gpu(snn_model *model, int32_t device) {
    return guarded(__func__, [&] {
        need(model, "model");
        if (device < 0) fail(SNN_ERR_GPU_INDEX, "device must be a GPU index >= 0, got %d", device);
        model_move(model->m, backend_for(device));
    });
}

SNN_API snn_status snn_to_cpu(snn_model *model) {
    return guarded(__func__, [&] {
        need(model, "model");
        model_move(model->m, cpu_backend());
    });
}

SNN_API snn_status snn_to_best_device(snn_model *model, int32_t *device) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(device, "device");
        if (gpu_count() > 0) {
            model_move(model->m, backend_for(0));
        }
        *device = model->m.device();
    });
}

SNN_API snn_status snn_model_device(const snn_model *model, int32_t *device) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(device, "device");
        *device = model->m.device();
    });
}

}  // extern "C"

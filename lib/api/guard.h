// The C boundary's plumbing: handle structs, argument checks and the guard
// that turns every exception into a status plus a thread-local message.
#pragma once

#include <cmath>
#include <new>
#include <string>

#include "common/buffers.h"
#include "common/error.h"
#include "device/devices.h"
#include "engine/network.h"
#include "engine/settings.h"
#include "engine/transfers.h"
#include "snn.h"

struct snn_model {
    snn::Model m;
};
struct snn_forward_cache {
    snn::ForwardCache c;
};
struct snn_backward_cache {
    snn::BackwardCache c;
};
struct snn_optimiser {
    snn::Optimiser o;
};
struct snn_dataset : snn::Dataset {};

namespace snn {

// Records "<function>: <message>" as this thread's last error (bytes that
// are not UTF-8 written as \xNN) and returns status.
snn_status record_error(const char *function, snn_status status, const char *message);
// Sends this thread's last error to the log callback.
void log_last_error() noexcept;

// Runs body; any exception becomes a status. Nothing allocates on success.
// The failure is logged after the handler has ended, so a log callback that
// leaves by longjmp or a foreign unwind skips no active catch. The calling
// thread's current CUDA device is the same after as before.
template <class Body>
snn_status guarded(const char *function, Body &&body) noexcept {
    DeviceScope device_scope;
    snn_status status;
    try {
        body();
        return SNN_OK;
    } catch (const Error &e) {
        status = record_error(function, e.status(), e.what());
    } catch (const std::bad_alloc &) {
        status = record_error(function, SNN_ERR_OUT_OF_MEMORY, "out of host memory");
    } catch (const std::exception &e) {
        status = record_error(function, SNN_ERR_INTERNAL, e.what());
    } catch (...) {
        status = record_error(function, SNN_ERR_INTERNAL, "unknown internal error");
    }
    log_last_error();
    return status;
}

inline void need(const void *p, const char *name) {
    if (p == nullptr) fail(SNN_ERR_NULL_ARGUMENT, "%s is NULL", name);
}

void check_max_batch(int64_t max_batch);
// n samples in 1..max_batch.
void check_batch_n(size_t n, int64_t max_batch);
// Every indices[i] in [0, sample_count).
void check_indices(const int64_t *indices, size_t n, size_t sample_count);

// The handle was made for this model (SNN_ERR_MODEL_MISMATCH otherwise).
// When the model moved to another device since, the handle follows it there
// first: a one-off allocation and copy that keeps the handle's contents.
inline void follow(ForwardCache &c, const Model &m) { forward_cache_follow(c, m); }
inline void follow(BackwardCache &b, const Model &m) { backward_cache_follow(b, m); }
inline void follow(Optimiser &o, const Model &m) { optimiser_follow(o, m); }
template <class Handle>
void check_model_id(const Handle &h, const Model &m, const char *what) {
    if (h.model_id != m.id)
        fail(SNN_ERR_MODEL_MISMATCH, "%s was made for another model", what);
}
template <class Handle>
void check_model(Handle &h, const Model &m, const char *what) {
    check_model_id(h, m, what);
    if (h.placement != m.placement) follow(h, m);
}

std::string device_name(int32_t device);

}  // namespace snn

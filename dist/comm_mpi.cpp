// libsnn_dist: data-parallel training over MPI (the contract is in
// include/snn_dist.h). Every collective is started non-blocking and polled
// against a deadline, so a dead rank becomes a status instead of a hang.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "guard.h"
#include "snn_dist.h"

struct snn_comm {
    MPI_Comm comm = MPI_COMM_NULL;
    int rank = 0, size = 1;
    double timeout = 300.0;
    std::vector<float> values;          // parameters or gradients in flight
    double sums[SNN_COMM_MAX_SUM] = {};  // snn_comm_allreduce_sum's buffer
    bool broken = false;                 // a collective failed or timed out
    std::string failure;                 // its message
    snn_comm *next_kept = nullptr;       // in the list of broken communicators
};

using namespace snn_dist;

namespace {


std::string mpi_error_text(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
    return std::string(text, size_t(length));
}

// ---------------------------------------------------------------------------
// Process-wide MPI state: whether this library initialised MPI, how many
// communicators live, whether one of them failed.

std::mutex state_mutex;
bool initialised_mpi = false;
int live_comms = 0;
bool any_failure = false;
// Broken communicators are kept, never freed: MPI may still write into their
// buffers (a collective that timed out cannot be cancelled).
snn_comm *kept_comms = nullptr;

double now_seconds() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

void break_comm(snn_comm *c, const std::string &message) {
    c->broken = true;
    c->failure = message;
    std::lock_guard<std::mutex> lock(state_mutex);
    any_failure = true;
}

// Call with state_mutex held.
void keep_broken(snn_comm *c) {
    c->next_kept = kept_comms;
    kept_comms = c;
}

void check_started(snn_comm *c, int code, const char *what) {
    if (code == MPI_SUCCESS) return;
    std::string message = std::string(what) + " could not start: " + mpi_error_text(code);
    break_comm(c, message);
    fail(SNN_ERR_IO, "%s", message.c_str());
}

// Polls the request until it completes, MPI reports an error, or the
// communicator's timeout passes. Spins for the first millisecond (short
// collectives), then sleeps 50 us between polls so a long wait does not burn
// a core.
void wait_for(snn_comm *c, MPI_Request *request, const char *what) {
    const double start = now_seconds();
    for (;;) {
        int done = 0;
        int code = MPI_Test(request, &done, MPI_STATUS_IGNORE);
        if (code != MPI_SUCCESS) {
            std::string message = std::string(what) + " failed: " + mpi_error_text(code);
            break_comm(c, message);
            fail(SNN_ERR_IO, "%s", message.c_str());
        }
        if (done) return;
        const double waited = now_seconds() - start;
        if (waited > c->timeout) {
            char text[256];
            std::snprintf(text, sizeof text,
                          "no answer from the other ranks within %g s during %s (a rank died or "
                          "stalled); the communicator is unusable",
                          c->timeout, what);
            break_comm(c, text);
            fail(SNN_ERR_IO, "%s", text);
        }
        if (waited > 1e-3) {
            timespec pause = {0, 50000};
            nanosleep(&pause, nullptr);
        }
    }
}

void check_usable(const snn_comm *c) {
    if (c->broken)
        fail(SNN_ERR_STATE, "the communicator failed earlier (%s); destroy it", c->failure.c_str());
}

// The parameter count of the model, with the buffer grown to hold it (the
// only allocation after creation, and only when a larger model comes).
int prepare(snn_comm *c, const snn_model *model) {
    size_t count = 0;
    check_snn(snn_parameter_count(model, &count), "snn_parameter_count");
    if (count > size_t(INT_MAX))
        fail(SNN_ERR_UNSUPPORTED, "the model has %zu parameters; MPI counts stop at %d", count,
             INT_MAX);
    if (c->values.size() < count) c->values.resize(count);
    return int(count);
}

}  // namespace

extern "C" {

SNN_DIST_API const char *snn_dist_last_error(void) { return last_error.c_str(); }

SNN_DIST_API snn_status snn_comm_create_mpi(const void *mpi_comm, snn_comm **out) {
    return guarded(__func__, [&] {
        need(out, "out");
        auto c = std::make_unique<snn_comm>();
        {
            std::lock_guard<std::mutex> lock(state_mutex);
            int initialised = 0, finalised = 0;
            MPI_Initialized(&initialised);
            MPI_Finalized(&finalised);
            if (finalised) fail(SNN_ERR_STATE, "MPI was already finalised");
            if (!initialised) {
                int provided = 0;
                int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
                if (code != MPI_SUCCESS)
                    fail(SNN_ERR_IO, "MPI_Init_thread failed: %s", mpi_error_text(code).c_str());
                initialised_mpi = true;
            }
        }
        MPI_Comm base = mpi_comm ? *static_cast<const MPI_Comm *>(mpi_comm) : MPI_COMM_WORLD;
        MPI_Request request;
        check_started(c.get(), MPI_Comm_idup(base, &c->comm, &request), "duplicating the communicator");
        try {
            wait_for(c.get(), &request, "duplicating the communicator");
        } catch (const Failure &) {
            std::lock_guard<std::mutex> lock(state_mutex);
            keep_broken(c.release());
            throw;
        }
        MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
        MPI_Comm_rank(c->comm, &c->rank);
        MPI_Comm_size(c->comm, &c->size);
        {
            std::lock_guard<std::mutex> lock(state_mutex);
            ++live_comms;
        }
        *out = c.release();
    });
}

SNN_DIST_API void snn_comm_destroy(snn_comm *comm) {
    if (comm == nullptr) return;
    std::lock_guard<std::mutex> lock(state_mutex);
    if (comm->broken) {
        keep_broken(comm);
    } else {
        MPI_Comm_free(&comm->comm);
        delete comm;
    }
    if (--live_comms == 0 && initialised_mpi && !any_failure) {
        int finalised = 0;
        MPI_Finalized(&finalised);
        if (!finalised) MPI_Finalize();
        initialised_mpi = false;
    }
}

SNN_DIST_API snn_status snn_comm_rank(const snn_comm *comm, int32_t *rank, int32_t *size) {
    return guarded(__func__, [&] {
        need(comm, "comm");
        if (rank) *rank = comm->rank;
        if (size) *size = comm->size;
    });
}

SNN_DIST_API snn_status snn_comm_set_timeout(snn_comm *comm, double seconds) {
    return guarded(__func__, [&] {
        need(comm, "comm");
        if (!(seconds > 0.0)) fail(SNN_ERR_INVALID_ARGUMENT, "seconds must be > 0, got %g", seconds);
        comm->timeout = seconds;
    });
}

SNN_DIST_API snn_status snn_comm_prepare(snn_comm *comm, const snn_model *model) {
    return guarded(__func__, [&] {
        need(comm, "comm");
        need(model, "model");
        prepare(comm, model);
    });
}

SNN_DIST_API snn_status snn_comm_broadcast_parameters(snn_comm *comm, snn_model *model,
                                                      int32_t root) {
    return guarded(__func__, [&] {
        need(comm, "comm");
        need(model, "model");
        check_usable(comm);
        if (root < 0 || root >= comm->size)
            fail(SNN_ERR_INVALID_ARGUMENT, "root %d is outside [0, %d) (the ranks)", root, comm->size);
        const int count = prepare(comm, model);

        // Every rank must hold a model of the same size: compare the largest
        // and the smallest count first, so a mismatch is an error, not a
        // truncated message.
        long extremes[2] = {count, -long(count)};
        MPI_Request request;
        check_started(comm, MPI_Iallreduce(MPI_IN_PLACE, extremes, 2, MPI_LONG, MPI_MAX,
                                           comm->comm, &request),
                      "comparing parameter counts");
        wait_for(comm, &request, "comparing parameter counts");
        if (extremes[0] != count || -extremes[1] != count)
            fail(SNN_ERR_COUNT, "the ranks' models differ in size (%ld to %ld parameters)",
                 -extremes[1], extremes[0]);

        float *values = comm->values.data();
        if (comm->rank == root)
            check_snn(snn_get_parameters(model, values, size_t(count)), "snn_get_parameters");
        check_started(comm, MPI_Ibcast(values, count, MPI_FLOAT, root, comm->comm, &request),
                      "broadcasting the parameters");
        wait_for(comm, &request, "broadcasting the parameters");
        if (comm->rank != root)
            check_snn(snn_set_parameters(model, values, size_t(count)), "snn_set_parameters");
    });
}

SNN_DIST_API snn_status snn_comm_allreduce_gradients(snn_comm *comm, const snn_model *model,
                                                     snn_backward_cache *bwd) {
    return guarded(__func__, [&] {
        need(comm, "comm");
        need(model, "model");
        need(bwd, "bwd");
        check_usable(comm);
        const int count = prepare(comm, model);
        float *values = comm->values.data();
        check_snn(snn_get_gradients(bwd, values, size_t(count)), "snn_get_gradients");
        MPI_Request request;
        check_started(comm, MPI_Iallreduce(MPI_IN_PLACE, values, count, MPI_FLOAT, MPI_SUM,
                                           comm->comm, &request),
                      "summing the gradients");
        wait_for(comm, &request, "summing the gradients");
        // mean = sum / ranks
        const float ranks = float(comm->size);
        for (int i = 0; i < count; ++i) values[i] /= ranks;
        check_snn(snn_set_gradients(bwd, values, size_t(count)), "snn_set_gradients");
    });
}

SNN_DIST_API snn_status snn_comm_allreduce_sum(snn_comm *comm, double *data, size_t count) {
    return guarded(__func__, [&] {
        need(comm, "comm");
        need(data, "data");
        check_usable(comm);
        if (count > SNN_COMM_MAX_SUM)
            fail(SNN_ERR_COUNT, "count %zu is above SNN_COMM_MAX_SUM (%d)", count, SNN_COMM_MAX_SUM);
        for (size_t i = 0; i < count; ++i) comm->sums[i] = data[i];
        MPI_Request request;
        check_started(comm, MPI_Iallreduce(MPI_IN_PLACE, comm->sums, int(count), MPI_DOUBLE,
                                           MPI_SUM, comm->comm, &request),
                      "summing values");
        wait_for(comm, &request, "summing values");
        for (size_t i = 0; i < count; ++i) data[i] = comm->sums[i];
    });
}

}  // extern "C"

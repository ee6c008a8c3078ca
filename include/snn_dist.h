/*
 * snn_dist.h — data-parallel training for snn across processes (MPI).
 *
 * This header belongs to libsnn_dist, a library of its own that links
 * libsnn and MPI, so that libsnn itself never depends on MPI. It is C99 and
 * compiles as C++. It uses the types and statuses of snn.h.
 *
 * ---------------------------------------------------------------------------
 * HOW DATA-PARALLEL TRAINING WORKS
 *
 * Every process (an MPI "rank") holds a full copy of the model. Each step,
 * every rank runs forward and backprop on its own share of the global batch;
 * the gradients are then averaged over the ranks, so every rank holds the
 * gradient of the whole global batch, and every rank takes the same optimiser
 * step. Since the ranks start from the same parameters (broadcast once) and
 * apply the same updates, they stay identical without ever sending
 * parameters again:
 *
 *     snn_comm *comm = NULL;
 *     snn_comm_create_mpi(NULL, &comm);            (MPI_COMM_WORLD)
 *     snn_comm_broadcast_parameters(comm, model, 0);
 *     snn_comm_prepare(comm, model);               (optional: allocate now)
 *     for each step:
 *         gather this rank's share of the global batch into fwd and bwd
 *         snn_forward(fwd, model);
 *         snn_backprop(bwd, fwd, model, SNN_LOSS_LOGIT_CROSSENTROPY, &loss);
 *         snn_comm_allreduce_gradients(comm, model, bwd);
 *         snn_optimiser_step(opt, model, bwd);
 *     snn_comm_destroy(comm);
 *
 * The losses are means over each rank's batch, so the average of the ranks'
 * gradients is the gradient of the global batch's mean loss when every rank
 * has the same share. With shares of different sizes, weight them yourself
 * (snn_comm_allreduce_sum) or keep them equal.
 *
 * ---------------------------------------------------------------------------
 * CONVENTIONS (as in snn.h)
 *
 *   - Every fallible function returns snn_status; a failed call leaves its
 *     out parameters untouched. The message of the last failure of an
 *     snn_comm_* call on this thread is snn_dist_last_error() (not
 *     snn_last_error(), which belongs to libsnn); when an snn_* call made
 *     inside failed, its status is returned and its message is included.
 *   - The library never aborts or exits the process, and never calls
 *     MPI_Abort. A communication that fails or does not finish within the
 *     communicator's timeout returns SNN_ERR_IO.
 *   - Handles are opaque; snn_comm_destroy accepts NULL. The library keeps no
 *     pointer the caller passed after a call returns.
 *
 * FAILURES AND TIMEOUTS
 *
 *   Every collective operation (broadcast, all-reduce, and the duplication of
 *   the MPI communicator at creation) is started non-blocking and polled
 *   until it completes, an MPI call reports an error, or the communicator's
 *   timeout (snn_comm_set_timeout, 300 s by default) passes. So a rank that
 *   dies or stalls makes the others return SNN_ERR_IO within the timeout
 *   instead of hanging forever. After such a failure the communicator is
 *   broken: MPI may still own the operation that never completed, so every
 *   later call on it returns SNN_ERR_STATE, and the host should save what it
 *   needs (snn_model_save is atomic) and exit. The usual MPI launchers kill
 *   the surviving ranks when one dies; Open MPI's mpirun keeps them running
 *   with "--mca orte_abort_on_non_zero_status 0".
 *
 * THREADS
 *
 *   When the host has not initialised MPI, snn_comm_create_mpi does, asking
 *   for MPI_THREAD_SERIALIZED (any thread, one at a time). A host that
 *   initialises MPI itself may use any level: snn's own worker threads never
 *   call MPI; the host must then call snn_comm_* from the thread its level
 *   allows. Calls on distinct communicators must not overlap in time unless
 *   MPI runs with MPI_THREAD_MULTIPLE. No call allocates memory except
 *   snn_comm_create_mpi and the first use of a model (or snn_comm_prepare).
 * ---------------------------------------------------------------------------
 */
#ifndef SNN_DIST_H
#define SNN_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "snn.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  if defined(SNN_DIST_BUILDING_LIBRARY)
#    define SNN_DIST_API __declspec(dllexport)
#  else
#    define SNN_DIST_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define SNN_DIST_API __attribute__((visibility("default")))
#else
#  define SNN_DIST_API
#endif

/* A group of processes training one model together. */
typedef struct snn_comm snn_comm;

/* The message of the last failed snn_comm_* call on this thread, UTF-8,
 * e.g. "snn_comm_allreduce_gradients: no answer from the other ranks within
 * 5 s (a rank died or stalled)". Empty when none has failed. Valid until the
 * next snn_comm_* call on this thread. Never NULL. */
SNN_DIST_API const char *snn_dist_last_error(void);

/* Creates a communicator over the processes of an MPI communicator.
 * `mpi_comm` points to an MPI_Comm (the library duplicates it, so the
 * caller's communicator may be freed afterwards), or is NULL for
 * MPI_COMM_WORLD. Initialises MPI (MPI_THREAD_SERIALIZED) if the host has not;
 * MPI is then finalised when the last communicator is destroyed, unless one
 * of them failed. The duplicate returns errors (MPI_ERRORS_RETURN) instead of
 * aborting. Collective: every process of the MPI communicator must call it.
 * On success *out receives a communicator that the caller destroys with
 * snn_comm_destroy.
 * Errors: SNN_ERR_NULL_ARGUMENT (out), SNN_ERR_STATE (MPI was already
 * finalised), SNN_ERR_IO (MPI failed, or the other processes did not join
 * within 300 s), SNN_ERR_OUT_OF_MEMORY. */
SNN_DIST_API snn_status snn_comm_create_mpi(const void *mpi_comm, snn_comm **out);

/* Frees the communicator and its buffers. NULL is ignored. Not collective.
 * The buffers of a communicator that failed are kept until the process
 * exits, since MPI may still write into them. */
SNN_DIST_API void snn_comm_destroy(snn_comm *comm);

/* This process's rank in [0, size) and the number of processes. Either
 * pointer may be NULL. Errors: SNN_ERR_NULL_ARGUMENT (comm). */
SNN_DIST_API snn_status snn_comm_rank(const snn_comm *comm, int32_t *rank, int32_t *size);

/* Bounds how long each later collective call waits for the other ranks,
 * in seconds (> 0; INFINITY waits forever). Local: ranks may differ.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_INVALID_ARGUMENT (NaN or <= 0). */
SNN_DIST_API snn_status snn_comm_set_timeout(snn_comm *comm, double seconds);

/* Allocates the communication buffer for `model` (one float per parameter)
 * now, so that no later call allocates. Without it the first broadcast or
 * all-reduce allocates it. Local. Errors: SNN_ERR_NULL_ARGUMENT,
 * SNN_ERR_OUT_OF_MEMORY. */
SNN_DIST_API snn_status snn_comm_prepare(snn_comm *comm, const snn_model *model);

/* Copies rank `root`'s parameters into `model` on every rank, so that all
 * ranks start identical. Collective; the models must have the same
 * parameter count. Works for a model on any device (through
 * snn_get_parameters / snn_set_parameters).
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_INVALID_ARGUMENT (root outside
 * [0, size)), SNN_ERR_IO (failure or timeout; the communicator is then
 * broken), SNN_ERR_STATE (broken by an earlier failure), and those of
 * snn_get_parameters / snn_set_parameters. */
SNN_DIST_API snn_status snn_comm_broadcast_parameters(snn_comm *comm, snn_model *model,
                                                      int32_t root);

/* Replaces the gradient held by `bwd` (the last snn_backprop of `model` on
 * this rank) with the mean of all ranks' gradients: the sum over the ranks
 * divided by their number, in the same order on every rank, so all ranks
 * get bit-identical gradients. Collective. Works on any device (through
 * snn_get_gradients / snn_set_gradients).
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_IO (failure or timeout; the
 * communicator is then broken), SNN_ERR_STATE (broken earlier), and those of
 * snn_get_gradients / snn_set_gradients (e.g. SNN_ERR_COUNT when bwd was
 * made for a model of another size). */
SNN_DIST_API snn_status snn_comm_allreduce_gradients(snn_comm *comm, const snn_model *model,
                                                     snn_backward_cache *bwd);

/* Replaces data[0..count) on every rank with its sum over the ranks, for
 * small host arrays such as losses and counts of correct answers; count is
 * at most SNN_COMM_MAX_SUM (SNN_ERR_COUNT otherwise). Collective; data is
 * not touched on failure. Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_COUNT,
 * SNN_ERR_IO, SNN_ERR_STATE. */
#define SNN_COMM_MAX_SUM 1024
SNN_DIST_API snn_status snn_comm_allreduce_sum(snn_comm *comm, double *data, size_t count);

#ifdef __cplusplus
}
#endif

#endif /* SNN_DIST_H */

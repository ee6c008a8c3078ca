/*
 * snn_dist_nccl.h — data-parallel training for snn on several GPUs of one
 * process, with NCCL.
 *
 * This header belongs to libsnn_nccl, a library of its own that links
 * libsnn, NCCL and the CUDA runtime, so that libsnn itself never depends on
 * them. It is C99 and compiles as C++. It uses the types and statuses of
 * snn.h. (Across processes and machines, see snn_dist.h: MPI.)
 *
 * ---------------------------------------------------------------------------
 * HOW IT WORKS
 *
 * The process holds one replica of the model per GPU. Each step, every
 * replica runs forward and backprop on its own share of the batch; the
 * gradients are then averaged across the replicas on the GPUs themselves
 * (ncclAllReduce on the device memory of snn_gradients_device, never through
 * the host), and every replica takes the same optimiser step. Since the
 * replicas start from the same parameters and apply the same updates, they
 * stay identical:
 *
 *     int32_t gpus[2] = {0, 1};
 *     snn_model *models[2]; snn_backward_cache *bwd[2]; ...
 *     (models[i] created from the same spec and moved with snn_to_gpu(models[i], gpus[i]);
 *      caches and optimisers made for each after the move)
 *     snn_nccl_comm *comm = NULL;
 *     snn_nccl_comm_create(gpus, 2, &comm);
 *     snn_nccl_broadcast_replicas(comm, models, 2);   (replica 0's parameters)
 *     for each step:
 *         for each replica i: its share of the batch into fwd[i], bwd[i];
 *                             snn_forward(fwd[i], models[i]);
 *                             snn_backprop(bwd[i], fwd[i], models[i], loss, NULL);
 *         snn_nccl_allreduce_replica_gradients(comm, models, bwd, 2);
 *         for each replica i: snn_optimiser_step(opt[i], models[i], bwd[i]);
 *     snn_nccl_comm_destroy(comm);
 *
 * snn_forward and snn_backprop queue their work on each cache's stream and
 * return early when no loss value is asked for, so a loop over the replicas
 * from one thread keeps every GPU busy. The losses are means over each
 * replica's batch: with equal shares, the average of the replicas' gradients
 * is the gradient of the whole batch's mean loss.
 *
 * ---------------------------------------------------------------------------
 * CONVENTIONS (as in snn.h)
 *
 *   - Every fallible function returns snn_status; a failed call leaves its
 *     out parameters untouched and leaks nothing. The message of the last
 *     failed snn_nccl_* call on this thread is snn_nccl_last_error(); when an
 *     snn_* call made inside failed, its status is returned and its message
 *     is included.
 *   - The library never aborts or exits the process. Every CUDA and NCCL
 *     call is checked: a failure returns SNN_ERR_CUDA (SNN_ERR_OUT_OF_MEMORY
 *     when memory ran out) with the call and NCCL's or CUDA's reason.
 *   - Handles are opaque; snn_nccl_comm_destroy accepts NULL. The library
 *     keeps no pointer the caller passed after a call returns.
 *   - One thread at a time per communicator. The calling thread's current
 *     CUDA device is restored before each call returns.
 *
 * FAILURES AND TIMEOUTS
 *
 *   An all-reduce is queued on the communicator's own stream on each GPU,
 *   then polled until every stream has finished, NCCL reports an error
 *   (ncclCommGetAsyncError), or the communicator's timeout
 *   (snn_nccl_set_timeout, 300 s by default) passes. On an NCCL error or a
 *   timeout the NCCL communicators are aborted (ncclCommAbort), the call
 *   returns SNN_ERR_CUDA or SNN_ERR_IO, and the communicator is broken: every
 *   later call on it returns SNN_ERR_STATE; destroy it and make a new one.
 * ---------------------------------------------------------------------------
 */
#ifndef SNN_DIST_NCCL_H
#define SNN_DIST_NCCL_H

#include <stddef.h>
#include <stdint.h>

#include "snn.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  if defined(SNN_NCCL_BUILDING_LIBRARY)
#    define SNN_NCCL_API __declspec(dllexport)
#  else
#    define SNN_NCCL_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define SNN_NCCL_API __attribute__((visibility("default")))
#else
#  define SNN_NCCL_API
#endif

/* The GPUs of this process that train one model together, one replica per
 * GPU. */
typedef struct snn_nccl_comm snn_nccl_comm;

/* The message of the last failed snn_nccl_* call on this thread, UTF-8,
 * e.g. "snn_nccl_comm_create: no CUDA driver is installed (cudaGetDeviceCount:
 * ...)". Empty when none has failed. Valid until the next snn_nccl_* call on
 * this thread. Never NULL. */
SNN_NCCL_API const char *snn_nccl_last_error(void);

/* Creates one NCCL communicator over GPUs devices[0..count) of this process
 * (ncclCommInitAll), and one CUDA stream per GPU for its collectives.
 * Replica i of the later calls lives on devices[i]. count >= 1; the devices
 * are distinct. On success *out receives a communicator that the caller
 * destroys with snn_nccl_comm_destroy.
 * Errors: SNN_ERR_NULL_ARGUMENT (devices or out), SNN_ERR_INVALID_ARGUMENT
 * (count < 1, a device listed twice), SNN_ERR_GPU_DRIVER (no CUDA driver, or
 * one too old for the CUDA runtime; the message says which),
 * SNN_ERR_NO_GPU (CUDA works but sees no GPU), SNN_ERR_GPU_INDEX (a device
 * < 0 or beyond the GPUs CUDA sees), SNN_ERR_UNSUPPORTED (the NCCL loaded is
 * older than 2.14), SNN_ERR_CUDA (NCCL or CUDA failed),
 * SNN_ERR_OUT_OF_MEMORY. */
SNN_NCCL_API snn_status snn_nccl_comm_create(const int32_t *devices, int32_t count,
                                             snn_nccl_comm **out);

/* Frees the NCCL communicators and streams. NULL is ignored. */
SNN_NCCL_API void snn_nccl_comm_destroy(snn_nccl_comm *comm);

/* The number of GPUs (replicas) of the communicator.
 * Errors: SNN_ERR_NULL_ARGUMENT. */
SNN_NCCL_API snn_status snn_nccl_comm_size(const snn_nccl_comm *comm, int32_t *count);

/* Bounds how long each later all-reduce waits for the GPUs, in seconds
 * (> 0; INFINITY waits forever).
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_INVALID_ARGUMENT (NaN or <= 0). */
SNN_NCCL_API snn_status snn_nccl_set_timeout(snn_nccl_comm *comm, double seconds);

/* Copies replica 0's parameters into replicas 1..count-1, so that all start
 * identical. models[i] must live on the communicator's GPU i and count must
 * be the communicator's size. The copy goes through host memory
 * (snn_get_parameters / snn_set_parameters): it is done once, before
 * training. Errors: SNN_ERR_NULL_ARGUMENT (comm, models, or one of them),
 * SNN_ERR_INVALID_ARGUMENT (count differs from the communicator's size),
 * SNN_ERR_DEVICE_MISMATCH (a model on another device than its GPU),
 * SNN_ERR_COUNT (models of different sizes), SNN_ERR_STATE (the
 * communicator is broken), and those of snn_get_parameters /
 * snn_set_parameters. */
SNN_NCCL_API snn_status snn_nccl_broadcast_replicas(snn_nccl_comm *comm, snn_model *const *models,
                                                    int32_t count);

/* Replaces the gradient held by each caches[i] (the last snn_backprop of
 * models[i]) with the mean of all replicas' gradients, on the GPUs: waits
 * for each cache's backprop (snn_backward_cache_synchronize), then runs one
 * NCCL all-reduce (ncclAvg) in place on the memory of snn_gradients_device,
 * on the communicator's stream of each GPU, and waits for it, so that the
 * caches are ready for snn_optimiser_step when the call returns. All
 * replicas receive the same mean. caches[i] must have been made for
 * models[i] (the library checks its device and size, not its model).
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_INVALID_ARGUMENT (count differs
 * from the communicator's size), SNN_ERR_DEVICE_MISMATCH (a model or cache
 * not on its GPU), SNN_ERR_COUNT (sizes differ), SNN_ERR_STATE (broken
 * earlier), SNN_ERR_CUDA (NCCL or CUDA failed; the communicator is then
 * broken), SNN_ERR_IO (not finished within the timeout; broken too), and
 * those of snn_backward_cache_synchronize / snn_gradients_device. */
SNN_NCCL_API snn_status snn_nccl_allreduce_replica_gradients(snn_nccl_comm *comm,
                                                             snn_model *const *models,
                                                             snn_backward_cache *const *caches,
                                                             int32_t count);

#ifdef __cplusplus
}
#endif

#endif /* SNN_DIST_NCCL_H */

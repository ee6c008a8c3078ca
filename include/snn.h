/*
 * snn.h — the public C ABI of snn, an embeddable engine for training and
 * running small and medium neural networks (MLPs and CNNs) on the CPU
 * (OpenBLAS) and on NVIDIA GPUs (CUDA, cuBLAS, cuDNN).
 *
 * This header is the whole interface. It is C99 and compiles as C++.
 *
 * ---------------------------------------------------------------------------
 * CONVENTIONS
 *
 * Status.  Every fallible function returns snn_status; SNN_OK (0) is success.
 *   Results come back through out parameters, which a failed call leaves
 *   untouched; a failed call leaks nothing. snn_status_string() gives static
 *   text for a code; snn_last_error() gives a thread-local message naming the
 *   function, the argument and the reason of the last failure on this thread.
 *
 * Ownership.  Handles (snn_model, snn_forward_cache, snn_backward_cache,
 *   snn_optimiser) are opaque; each has one *_destroy function that accepts
 *   NULL. The library never keeps a pointer the caller passed after the call
 *   returns, unless the comment of that function says so. Pointers the library
 *   returns (snn_parameters, snn_outputs, ...) are borrowed views: they stay
 *   valid until the owning handle is destroyed or moved to another device.
 *
 * Buffers.  A function that takes a caller's buffer with its element count
 *   (snn_set_inputs(cache, inputs, count), snn_get_parameters(model, dst,
 *   count), ...) applies one rule: a NULL pointer with a count above 0 is
 *   SNN_ERR_NULL_ARGUMENT ("<argument> is NULL"), checked with the other
 *   pointers first; then a count other than the one the function expects is
 *   SNN_ERR_COUNT ("expected N floats (batch B x F), got M" or "expected N
 *   floats (the parameter count), got M"; for batches of samples, labels and
 *   indices, SNN_ERR_BATCH). So NULL with a count of 0 is accepted exactly
 *   where 0 elements are expected (the parameters of a model without any,
 *   the state of a model without batchnorm), as an empty array of any
 *   language passes it. Values: with snn_set_check_finite on, the buffers
 *   that feed training from outside (inputs, targets, output gradients,
 *   gradients set with snn_set_gradients) are scanned and NaN or Inf is
 *   SNN_ERR_NOT_FINITE naming the first index; the model's own values
 *   (parameters, state) are stored as given, any float, as model files keep
 *   them. With the check off, no buffer is scanned. Device pointers
 *   (snn_set_inputs_device) are never scanned.
 *
 * Lifetimes.  Handles may be destroyed in any order. A cache or optimiser
 *   keeps its own copy of what it needs of its model (the layer description),
 *   so it never reads the model's memory except during a call that is given
 *   the model: after snn_model_destroy, its caches still answer every call
 *   that takes only the cache (snn_set_inputs, snn_outputs, snn_set_labels,
 *   snn_get_gradients, ...) and are destroyed safely. A call that takes a
 *   model needs a live one: passing a destroyed model is undefined, so
 *   bindings check their own model object before passing it (a garbage
 *   collector may free the handles in whatever order it likes).
 *
 * Layouts (row-major, identical to PyTorch's):
 *   - a batch of vectors is [batch][features];
 *   - a batch of images is [batch][channels][height][width] (NCHW);
 *   - dense weights are [out][in], followed by the bias [out];
 *   - convolution weights are [out][in][kh][kw], followed by the bias [out];
 *   - batchnorm and layernorm have a weight, then a bias;
 *   - the parameters of all layers lie in ONE flat float vector, layer after
 *     layer, in the order of the spec; gradients use the same layout;
 *   - the state (batchnorm's running_mean, running_var, num_batches_tracked)
 *     lies in a second flat vector the same way (snn_get_state).
 *   - a batch of sequences is [batch][time][features] (PyTorch's
 *     batch_first), T steps of F features per sample; token ids are
 *     [batch][time] int32 (snn_set_tokens). Samples shorter than T are
 *     padded at the end and given their lengths (snn_set_lengths); the
 *     output of a sequence model is [batch][T][outputs];
 *   A Julia array of size (features, batch), (w, h, c, batch) or
 *   (features, time, batch) is exactly this memory.
 *
 * Model spec.  A model is described by a short text, layers separated by ';'
 *   (or newlines), options separated by spaces. Each layer reads the output
 *   of the layer before it, or with from=ID that of an earlier layer named
 *   ID; add and concat also read an earlier layer by name, so a model is a
 *   graph (residual and branching networks):
 *     input N                  a vector of N features
 *     input HxWxC              an image of C channels, H rows, W columns
 *     input seq TxF            a sequence of T steps of F features
 *     input tokens T vocab=V   a sequence of T token ids in [0, V)
 *                              (V <= 2^24), set with snn_set_tokens
 *     dense N [act] [nobias] [init=I]   (on a sequence: on each step, as
 *                              nn.Linear on the last axis: [T][F] -> [T][N])
 *     conv KHxKW OUT [act] [stride=S] [pad=P] [nobias] [init=I]
 *          (KH alone means KHxKH; stride=SHxSW and pad=PHxPW also work)
 *     maxpool KH[xKW] [stride=S]   (stride defaults to the pool size)
 *     avgpool KH[xKW] [stride=S]
 *     globalavgpool            the mean of each channel: CxHxW -> Cx1x1
 *     flatten                  an image to a vector of C*H*W (NCHW order)
 *     relu | leaky_relu | tanh | sigmoid | gelu | silu
 *                              an activation as a layer of its own
 *     softmax                  over the features of a vector, or over the
 *                              channels of each pixel (nn.Softmax(dim=1)),
 *                              or over the features of each step of a
 *                              sequence (nn.Softmax(dim=-1))
 *     batchnorm [eps=E] [momentum=M]
 *                              nn.BatchNorm2d on images, BatchNorm1d on
 *                              vectors (eps 1e-5, momentum 0.1 in [0, 1];
 *                              weight and bias, running statistics in the
 *                              state)
 *     layernorm [eps=E]        nn.LayerNorm over each sample's whole shape
 *                              (weight and bias of that shape), or over
 *                              each step's F features of a sequence
 *                              (nn.LayerNorm(F)); in both,
 *                              eps is a normal float32 up to 1, in
 *                              [1.17549435e-38, 1]
 *     dropout P                zeroes elements with probability P (0, or
 *                              2^-24 <= P <= 1 - 2^-24: the mask draws
 *                              24-bit numbers) and scales the rest by
 *                              1/(1-P) in training mode; passes through in
 *                              inference
 *     add ID                   previous output (or from='s) + output of
 *                              layer ID (same shapes: a residual connection)
 *     concat ID                previous output (or from='s) joined with
 *                              layer ID's, in that order: channels for
 *                              images of equal HxW, features for vectors
 *     embedding D [pad=P]      token ids -> a sequence [T][D], row id of a
 *                              weight [V][D] (nn.Embedding; starts N(0, 1);
 *                              with pad=P the row P starts at zero and gets
 *                              no gradient, as padding_idx)
 *     posembed                 adds a learned weight [T][F] to a sequence
 *                              (nn.Embedding(T, F) of arange(T); starts
 *                              N(0, 0.02))
 *     seqpool last|mean|max    a sequence [T][F] -> a vector [F] over each
 *                              sample's valid steps: the last one, their
 *                              mean, their maximum (the gradient to the
 *                              first maximum)
 *     conv1d K OUT [act] [stride=S] [pad=P] [dilation=D] [nobias] [init=I]
 *                              nn.Conv1d over a sequence [T][C] (channels
 *                              last) -> [T'][OUT], T' = floor((T + 2P -
 *                              D(K-1) - 1) / S) + 1; weights [OUT][C][K],
 *                              then the bias; steps past a sample's length
 *                              count as zeros
 *     attention heads=H [causal]
 *                              multi-head self-attention over a sequence
 *                              [T][E], E divisible by H: exactly
 *                              nn.MultiheadAttention(E, H, batch_first=True)
 *                              on (x, x, x), keys past a sample's length
 *                              masked (snn_set_lengths), with causal also
 *                              keys after the query's step; parameters and
 *                              their initial values as PyTorch's
 *     lstm H [bidirectional] [last] [nobias]
 *     gru H [bidirectional] [last] [nobias]
 *                              nn.LSTM / nn.GRU (batch_first, one layer,
 *                              zero initial state) over a sequence TxF: the
 *                              hidden states TxH (Tx2H bidirectional:
 *                              forward, then reverse features), or with
 *                              last the final state H (2H), PyTorch's h_n;
 *                              a sample shorter than T runs as a packed
 *                              sequence (its padded steps output 0);
 *                              parameters start uniform in +-1/sqrt(H)
 *   Any layer takes name=ID (a letter or '_', then letters, digits or '_')
 *   for add, concat and from= to refer to; names are unique. Any layer after
 *   the input takes from=ID: it reads the output of the earlier layer named
 *   ID instead of the previous one (a branch). Every layer but the last, the
 *   model's output, must be read by a later layer (SNN_ERR_SPEC names the
 *   one that is not): a branch ends in an add or concat. A layer takes each
 *   option once (one activation, one stride=, one name=, ...): one given
 *   twice is an error, not a replacement.
 *   act is one of identity (default), relu, leaky_relu (slope 0.01), tanh,
 *   sigmoid (both within 2.5 ulp of the exact float result over the whole
 *   float range; as in PyTorch, their derivatives are computed from the
 *   output, so tanh's is nonzero until tanh rounds to 1 at |z| = 9.01), gelu
 *   (the exact erf form, PyTorch's default; within 4.5 ulp over the whole
 *   float range, its far negative tail included down to where it underflows
 *   at z = -14.4, and its derivative within 5 ulp except within 1/4 of its
 *   zero at z = -0.7518, where it is within 5.3e-8) and silu (z sigmoid(z));
 *   gelu and silu keep their input for the backward pass.
 *   I is one of glorot_uniform (default), glorot_normal, he_uniform,
 *   he_normal, lecun_normal, zeros. Biases always start at zero; batchnorm
 *   and layernorm weights at one.
 *   Output sizes use floor division, as PyTorch does.
 *   Example: "input 28x28x1; conv 5x5 16 relu; maxpool 2; conv 3x3 8 relu;
 *             maxpool 4; flatten; dense 10"
 *   A residual block: "input 28x28x1; conv 3 16 pad=1 relu name=a;
 *             conv 3 16 pad=1 nobias; batchnorm; relu; conv 3 16 pad=1
 *             nobias; batchnorm; add a; relu; globalavgpool; flatten;
 *             dropout 0.2; dense 10"
 *   A downsampling block, whose shortcut is a 1x1 convolution of stride 2
 *   from a: "input 8x8x3; conv 3 8 relu pad=1 name=a; conv 3 16 relu
 *             stride=2 pad=1; conv 3 16 pad=1 name=main; conv 1 16
 *             stride=2 from=a; add main; relu; globalavgpool; flatten;
 *             dense 10"
 *
 * Devices.  A model lives on one device: the CPU (SNN_DEVICE_CPU) or a GPU
 *   (index 0, 1, ...). Caches and optimisers are made on the model's device.
 *   When the model moves (snn_to_gpu, snn_to_cpu), they follow it: the first
 *   call that uses one of them with the moved model moves it too, keeping
 *   everything it holds (inputs, outputs, targets, labels, gradients, the
 *   optimiser's moments and step count), so training resumes exactly where
 *   it was. That first call allocates on the new device and copies once
 *   (SNN_ERR_OUT_OF_MEMORY leaves the handle where it was); later calls
 *   allocate nothing. Until that call, a handle stays on the old device:
 *   calls that take only the handle (snn_set_inputs, snn_outputs,
 *   snn_set_inputs_device, ...) act there. Pointers from snn_outputs /
 *   snn_gradients become invalid when their handle moves. GPUs are served by
 *   a plugin (libsnn_cuda.so; snn_cuda.dll on Windows) loaded on first use;
 *   without it, without a driver or without a device, every CPU function
 *   keeps working and GPU requests fail with a status that says which of
 *   these it was.
 *
 * ---------------------------------------------------------------------------
 * EMBEDDING CONTRACT
 *
 *   - The library never aborts or exits the host process. Out of memory, CUDA
 *     errors, bad files and bad arguments all become statuses. No C++
 *     exception crosses this interface.
 *   - There is no global mutable state besides the settings below
 *     (thread count, log callback, finite check, TF32).
 *   - Distinct handles may be used from different threads at once. One handle
 *     is used by one thread at a time. Several forward caches may run the same
 *     model concurrently from different threads: snn_forward only reads the
 *     parameters, and the state unless the cache is in training mode and the
 *     model has batchnorm (which updates its running statistics). Changing
 *     the parameters or the state (optimiser step, snn_model_init,
 *     snn_set_parameters, snn_set_state, a training-mode forward pass of a
 *     batchnorm model) while another thread runs that model is a data race.
 *   - On one thread, calls are ordered as they are made, on a GPU too: a
 *     parameter or state write (optimiser step, snn_model_init,
 *     snn_set_parameters, snn_set_state) comes after the forward and
 *     backward passes of every cache queued before it, and passes queued
 *     after it see the new values. The GPU work is ordered on the device
 *     (CUDA events): snn_forward and snn_optimiser_step do not wait for the
 *     GPU, and snn_backprop waits only for the loss it returns.
 *   - Every call leaves the calling thread's current CUDA device as it found
 *     it, so a host that drives another GPU from the same thread keeps its
 *     own. (A thread that never chose one finds device 0, CUDA's default.)
 *   - snn_set_num_threads() bounds the CPU threads the library uses (OpenBLAS
 *     included); tiny layers are never split across threads.
 *   - Results are deterministic for a fixed thread count: the same inputs and
 *     parameters give bit-identical outputs, gradients and updates. Another
 *     thread count may change the last bits: products that go through
 *     OpenBLAS are split over the threads in blocks, and OpenBLAS's kernels
 *     (which depend on the processor and on OPENBLAS_CORETYPE) may round a
 *     block of another size differently. The same holds between machines.
 *   - In steady state, snn_forward, snn_backprop and snn_optimiser_step
 *     perform no heap allocation: every buffer is allocated by
 *     snn_preallocate / snn_preallocate_grads / snn_optimiser_create. On the
 *     CPU that holds from the first step on: the worker threads are started
 *     by snn_preallocate and snn_set_num_threads, not by the first pass.
 *   - The library never calls back into the host from a thread it created;
 *     the log callback runs on the thread that made the failing call.
 *   - No lock is held while the log callback runs: it may remove or replace
 *     itself with snn_set_log_callback, a C++ exception it throws is caught
 *     and dropped, and one that unwinds or longjmps out (C#, Julia) leaves
 *     nothing locked. Another thread's call may still run the previous
 *     callback after snn_set_log_callback returns.
 *   - fork() (POSIX only; Windows has no fork): the child may go on using
 *     the library (CPU handles). It has none of the parent's CPU threads;
 *     its first parallel job starts them again. fork() waits for a parallel
 *     job under way on another thread to end. A child must not use GPU
 *     handles (CUDA does not survive fork).
 *   - Unloading: the library is never unmapped once loaded, nor are its
 *     threads stopped (a thread running unmapped code would crash the host):
 *     libsnn.so is linked nodelete, so dlclose() leaves it (POSIX); snn.dll
 *     pins itself when loaded, so FreeLibrary() leaves it (Windows). A later
 *     dlopen() / LoadLibrary() gets the same copy, settings and threads.
 *     Destroy every handle before unloading, or it stays allocated.
 *   - Platforms: Linux and other POSIX systems (libsnn.so, the GPU plugin
 *     libsnn_cuda.so) and Windows (snn.dll with its import library, the GPU
 *     plugin snn_cuda.dll). Paths are UTF-8 everywhere; on Windows they are
 *     converted to UTF-16 and a path that is not valid UTF-8 is refused
 *     with SNN_ERR_IO. A program that links the static library on Windows
 *     defines SNN_STATIC before including this header.
 * ---------------------------------------------------------------------------
 */
#ifndef SNN_H
#define SNN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  if defined(SNN_BUILDING_LIBRARY)
#    define SNN_API __declspec(dllexport)
#  elif defined(SNN_STATIC)
#    define SNN_API
#  else
#    define SNN_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define SNN_API __attribute__((visibility("default")))
#else
#  define SNN_API
#endif

/* ======================================================================== */
/* Version                                                                  */
/* ======================================================================== */

#define SNN_VERSION_MAJOR 0
#define SNN_VERSION_MINOR 1
#define SNN_VERSION_PATCH 0
/* MAJOR * 1000000 + MINOR * 1000 + PATCH */
#define SNN_VERSION_NUMBER 1000
#define SNN_VERSION_STRING "0.1.0"

/* The version of the library actually loaded (compare with
 * SNN_VERSION_NUMBER to detect a header and library that disagree). */
SNN_API int32_t snn_version_number(void);
/* Static text such as "0.1.0". Never NULL. */
SNN_API const char *snn_version_string(void);

/* Static text listing the features of this build, separated by spaces, e.g.
 * "cpu openblas cuda-plugin" ("openblas" only in a build whose matrix
 * products are OpenBLAS's, not snn's own). Never NULL. */
SNN_API const char *snn_build_features(void);
/* 1 if `feature` (one word of snn_build_features()) is in this build, else 0.
 * NULL gives 0. */
SNN_API int32_t snn_has_feature(const char *feature);

/* ======================================================================== */
/* Status and errors                                                        */
/* ======================================================================== */

typedef int32_t snn_status;
enum {
    SNN_OK = 0,
    SNN_ERR_NULL_ARGUMENT = 1,     /* a required pointer or handle was NULL */
    SNN_ERR_INVALID_ARGUMENT = 2,  /* a value out of its documented range */
    SNN_ERR_SPEC = 3,              /* the model spec does not parse */
    SNN_ERR_SHAPE = 4,             /* a layer does not fit its input */
    SNN_ERR_COUNT = 5,             /* a buffer has the wrong number of elements */
    SNN_ERR_BATCH = 6,             /* batch is 0 or above the preallocated maximum */
    SNN_ERR_LABEL = 7,             /* a class label out of range */
    SNN_ERR_MODEL_MISMATCH = 8,    /* a cache or optimiser used with another model */
    SNN_ERR_DEVICE_MISMATCH = 9,   /* handles or buffers on different devices */
    SNN_ERR_STATE = 10,            /* call out of order (e.g. backprop before forward) */
    SNN_ERR_OUT_OF_MEMORY = 11,    /* host or device allocation failed */
    SNN_ERR_NOT_FINITE = 12,       /* NaN or Inf found (see snn_set_check_finite) */
    SNN_ERR_IO = 13,               /* a file could not be read or written */
    SNN_ERR_FILE_FORMAT = 14,      /* a file or buffer is malformed */
    SNN_ERR_UNSUPPORTED = 15,      /* not available on this device or build */
    SNN_ERR_GPU_PLUGIN_NOT_FOUND = 16, /* libsnn_cuda.so could not be loaded */
    SNN_ERR_GPU_DRIVER = 17,       /* CUDA driver or runtime missing or too old */
    SNN_ERR_NO_GPU = 18,           /* CUDA works but sees no device */
    SNN_ERR_GPU_INDEX = 19,        /* device index out of range */
    SNN_ERR_CUDA = 20,             /* a CUDA, cuBLAS or cuDNN call failed */
    SNN_ERR_INTERNAL = 21,         /* a bug in snn: please report the message */
    SNN_ERR_TOKEN = 22             /* a token id outside the model's vocabulary */
};

/* Static English text for a status code ("unknown status" for others).
 * Never NULL. */
SNN_API const char *snn_status_string(snn_status status);

/* The message of the last failed call on this thread, UTF-8, e.g.
 * "snn_set_inputs: expected 12800 floats (batch 128 x 100), got 12700".
 * Empty string when no call has failed. The pointer stays valid until the
 * next snn_* call on this thread. Never NULL. Bytes quoted from a spec or
 * file that are not UTF-8 appear escaped as \xNN. */
SNN_API const char *snn_last_error(void);

/* ======================================================================== */
/* Settings (process-wide)                                                  */
/* ======================================================================== */

/* Bounds the CPU threads the library uses, OpenBLAS included. n >= 1.
 * The default is the SNN_NUM_THREADS environment variable, else all cores.
 * Errors: SNN_ERR_INVALID_ARGUMENT for n < 1. */
SNN_API snn_status snn_set_num_threads(int32_t n);
/* The current CPU thread bound. */
SNN_API int32_t snn_get_num_threads(void);

/* The environment variable SNN_CPU_ISA caps the instruction sets of snn's
 * own CPU kernels, read once at first use: portable (no SIMD kernels of
 * snn's own), avx2 (AVX2 and FMA), avx512 (AVX-512 F and BW, no BF16: bf16
 * is then emulated), avx512_bf16 (all; the default). The cap only lowers:
 * above what the processor has, the processor rules; an unknown name is no
 * cap. It does not reach OpenBLAS (OPENBLAS_CORETYPE picks its kernels) nor
 * the loops the compiler builds in several versions, which the loader picks
 * by processor. The CPU backend's name in messages ends with the level in
 * force, e.g. "cpu (OpenBLAS Cooperlake, snn kernels avx2)". */
/* Sets the instruction-set cap for the process instead of SNN_CPU_ISA:
 * "portable", "avx2", "avx512" or "avx512_bf16"; NULL returns to
 * SNN_CPU_ISA. Products follow at once; a forward or backward cache keeps
 * the convolution kernels it chose when it was made (make caches after the
 * call). Call it between passes, not while another thread runs one.
 * Errors: SNN_ERR_INVALID_ARGUMENT for any other name. */
SNN_API snn_status snn_set_cpu_isa(const char *level);
/* The level in force, the cap and the processor together: "avx512_bf16",
 * "avx512", "avx2", "portable", or "neon" (aarch64). Static text, never
 * NULL. */
SNN_API const char *snn_cpu_isa(void);

/* Log levels passed to the log callback. */
enum { SNN_LOG_ERROR = 0, SNN_LOG_WARNING = 1, SNN_LOG_INFO = 2 };

/* Receives the library's diagnostics: every failed call's message (level
 * SNN_LOG_ERROR) and notes such as the backend chosen (SNN_LOG_INFO).
 * `message` is valid only during the call. The callback runs on the thread
 * that made the snn_* call, with no lock held, and must not call back into
 * snn except snn_set_log_callback. A C++ exception it throws is dropped. */
typedef void (*snn_log_fn)(void *user_data, int32_t level, const char *message);
/* Installs (or with NULL removes) the log callback. `user_data` is kept and
 * passed back unchanged; the library never dereferences it. */
SNN_API snn_status snn_set_log_callback(snn_log_fn callback, void *user_data);

/* With on != 0, snn_backprop* and snn_optimiser_step check that the loss and
 * every gradient are finite and return SNN_ERR_NOT_FINITE (leaving the
 * parameters untouched) instead of poisoning the model, and the host buffers
 * of inputs, targets, output gradients and snn_set_gradients are scanned
 * (see CONVENTIONS, Buffers). Off by default; it costs one pass over the
 * gradients and over each buffer scanned. */
SNN_API snn_status snn_set_check_finite(int32_t on);

/* ======================================================================== */
/* Models                                                                   */
/* ======================================================================== */

typedef struct snn_model snn_model;
typedef struct snn_forward_cache snn_forward_cache;
typedef struct snn_backward_cache snn_backward_cache;
typedef struct snn_optimiser snn_optimiser;

/* Device identifiers: SNN_DEVICE_CPU, or a GPU index >= 0. */
#define SNN_DEVICE_CPU (-1)

/* The largest model a spec may declare, whether given to snn_model_create or
 * read from a model file: at most SNN_MAX_LAYERS layers after the input, in
 * at most SNN_MAX_SPEC_LENGTH characters (a layer has at most 16 words).
 * Beyond either, SNN_ERR_SPEC names the limit (and the position of the first
 * layer too many). Creating, preallocating, describing, saving and loading
 * take O(n log n) time in the number of layers n, so the largest model is
 * handled in about a second. */
#define SNN_MAX_LAYERS 100000
#define SNN_MAX_SPEC_LENGTH 4194304

/* Parses `spec` (see the top of this header) and creates a CPU model whose
 * parameters are initialised with seed 0 (see snn_model_init).
 * On success *out receives a new model that the caller destroys with
 * snn_model_destroy. Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_SPEC (message
 * gives the character position and reason: an unknown word, a number out of
 * its range, an option given twice in one layer, a spec beyond
 * SNN_MAX_LAYERS or SNN_MAX_SPEC_LENGTH), SNN_ERR_SHAPE (a layer does not
 * fit its input; the message names the layer and both shapes),
 * SNN_ERR_OUT_OF_MEMORY. */
SNN_API snn_status snn_model_create(const char *spec, snn_model **out);

/* Frees a model and its parameters (on any device). NULL is ignored. Caches
 * and optimisers made from it stay valid (see Lifetimes above): destroy them
 * before or after, in any order. */
SNN_API void snn_model_destroy(snn_model *model);

/* Writes the canonical spec of the model (which snn_model_create parses back
 * into the same model) into buf as a NUL-terminated string. *length receives
 * the length without the NUL. buf may be NULL with capacity 0 to ask only for
 * the length. Errors: SNN_ERR_NULL_ARGUMENT (model or length),
 * SNN_ERR_COUNT if capacity <= length (nothing is written then). */
SNN_API snn_status snn_model_describe(const snn_model *model, char *buf, size_t capacity,
                                      size_t *length);

/* Number of layers, the input layer included (layer 0 is the input). */
SNN_API snn_status snn_model_layer_count(const snn_model *model, int64_t *count);

/* The output shape of layer `layer` as channels, height, width. A vector of
 * N features is reported as N x 1 x 1, a sequence of T steps of F features
 * (or token ids, F = 1) as F x T x 1. Errors: SNN_ERR_INVALID_ARGUMENT for a
 * layer index out of range. */
SNN_API snn_status snn_model_layer_shape(const snn_model *model, int64_t layer,
                                         int64_t *channels, int64_t *height, int64_t *width);

/* Where layer `layer`'s parameters lie in the flat vector: weights at
 * [weight_offset, weight_offset + weight_count), bias at
 * [bias_offset, bias_offset + bias_count). Layers without parameters (input,
 * pooling, flatten) and layers without bias report counts of 0. Recurrent
 * layers (lstm, gru) report all their tensors as weights and a bias count of
 * 0: their two directions interleave weights and biases (PyTorch's order,
 * see "Model files"). */
SNN_API snn_status snn_model_layer_params(const snn_model *model, int64_t layer,
                                          size_t *weight_offset, size_t *weight_count,
                                          size_t *bias_offset, size_t *bias_count);

/* Number of input features per sample (C*H*W for images) and of outputs. */
SNN_API snn_status snn_model_input_size(const snn_model *model, size_t *features);
SNN_API snn_status snn_model_output_size(const snn_model *model, size_t *outputs);

/* Total number of parameters. */
SNN_API snn_status snn_parameter_count(const snn_model *model, size_t *count);

/* Re-initialises every parameter from `seed` with each layer's initialiser
 * (biases zero). Bit-identical on every platform and compiler for the same
 * seed. Works on any device. */
SNN_API snn_status snn_model_init(snn_model *model, uint64_t seed);

/* Zero-copy view of a CPU model's flat parameter vector: *data is writable
 * and stays valid until the model is destroyed or moved to another device.
 * Errors: SNN_ERR_DEVICE_MISMATCH when the model is on a GPU (use
 * snn_get_parameters / snn_set_parameters there). */
SNN_API snn_status snn_parameters(snn_model *model, float **data, size_t *count);

/* Copies all parameters out to / in from host memory, on any device.
 * `count` must equal snn_parameter_count (SNN_ERR_COUNT otherwise). Any
 * float is accepted, NaN, infinities and subnormals included (their bits
 * survive a save and a load, as they do in PyTorch's state_dict). */
SNN_API snn_status snn_get_parameters(const snn_model *model, float *dst, size_t count);
SNN_API snn_status snn_set_parameters(snn_model *model, const float *src, size_t count);

/* The model's state: values that are not trained by gradients but updated by
 * forward passes in training mode (batchnorm's running_mean [C],
 * running_var [C] and num_batches_tracked [1], layer after layer in the
 * order of the spec). It starts at PyTorch's initial values (means 0,
 * variances 1, counts 0), moves with the model between devices and is saved
 * in model files and checkpoints. num_batches_tracked is held as a float:
 * it counts exactly up to 2^24 batches, then stays there. Models without
 * such layers have a state of 0 values. snn_set_state accepts what a model
 * file holds, so every state it sets saves and loads back bit for bit:
 * running statistics may be any float; a count must be a whole number in
 * [0, 2^24] = [0, 16777216] (not -0, NaN, an infinity or a fraction).
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_COUNT (count differs from
 * snn_state_count; dst/src may be NULL when it is 0, see Buffers),
 * SNN_ERR_INVALID_ARGUMENT (snn_set_state: a count that is not one; the
 * message gives its index, layer and value; the state is unchanged). */
SNN_API snn_status snn_state_count(const snn_model *model, size_t *count);
SNN_API snn_status snn_get_state(const snn_model *model, float *dst, size_t count);
SNN_API snn_status snn_set_state(snn_model *model, const float *src, size_t count);

/* Where layer `layer`'s state lies in the state vector: [offset,
 * offset + count); a count of 0 for layers without state.
 * Errors: SNN_ERR_INVALID_ARGUMENT for a layer index out of range. */
SNN_API snn_status snn_model_layer_state(const snn_model *model, int64_t layer, size_t *offset,
                                         size_t *count);

/* ======================================================================== */
/* Forward pass                                                             */
/* ======================================================================== */

/* Allocates every buffer a forward pass of `model` needs for batches up to
 * max_batch, on the model's device. The cache belongs to this model (and its
 * current device). Its batch starts at max_batch.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_BATCH (max_batch < 1 or too large to
 * address), SNN_ERR_OUT_OF_MEMORY. */
SNN_API snn_status snn_preallocate(const snn_model *model, int64_t max_batch,
                                   snn_forward_cache **out);
SNN_API void snn_forward_cache_destroy(snn_forward_cache *cache);

/* Sets the batch size used by the next snn_set_inputs / snn_forward, any n in
 * 1..max_batch, without reallocating (SimpleNNs' truncate).
 * Errors: SNN_ERR_BATCH. */
SNN_API snn_status snn_cache_set_batch(snn_forward_cache *cache, int64_t batch);
/* The current and the maximum batch size. */
SNN_API snn_status snn_cache_batch(const snn_forward_cache *cache, int64_t *batch,
                                   int64_t *max_batch);

/* Training or inference mode of the cache's forward passes (on = 1 or 0); a
 * cache starts in training mode, as a PyTorch module does. Training mode:
 * batchnorm normalises with the batch's statistics and updates the model's
 * running statistics (so a forward pass in training mode of a model with
 * batchnorm writes the model's state: it must not run while another thread
 * uses that model), and dropout drops. Inference mode: batchnorm uses the
 * running statistics, dropout passes its input through, and the forward
 * pass only reads the model. A training cache and an inference cache may
 * serve one model at once (evaluate during training without switching).
 * Backprop differentiates the pass as it ran, in its mode.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_INVALID_ARGUMENT (on not 0 or 1). */
SNN_API snn_status snn_cache_set_training(snn_forward_cache *cache, int32_t on);
SNN_API snn_status snn_cache_training(const snn_forward_cache *cache, int32_t *on);

/* Inference rewrites of the cache's passes (on = 1 or 0; a cache starts with
 * them off). On, an inference-mode float32 pass of a CPU cache runs every
 * batchnorm whose input is a convolution or dense layer without activation
 * that nothing else reads folded into that layer: its weights scaled by
 * batchnorm weight / sqrt(running_var + eps) per channel, its bias
 * (bias - running_mean) * that + batchnorm bias, and a relu that alone reads
 * the batchnorm applied in the same pass (what ONNX Runtime and PyTorch's
 * fusion for inference do). The model's parameters stay as they are: the
 * folded copy is the cache's (allocated by this call), made again before a
 * pass whenever the parameters or the state were written since
 * (snn_set_parameters, snn_set_state, snn_optimiser_step, a training-mode
 * pass, a load), and before every pass once snn_parameters gave out its
 * writable view. Outputs equal the pass without rewrites within float32
 * rounding (the sums are not the same). Training-mode passes, bf16 and fp16
 * passes and GPU caches run the network as written. The nodes folded hold no
 * values after such a pass, so backprop of it is refused (SNN_ERR_STATE):
 * leave rewrites off in a cache that training or input gradients use.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_INVALID_ARGUMENT (on not 0 or 1),
 * SNN_ERR_OUT_OF_MEMORY. */
SNN_API snn_status snn_cache_set_inference_rewrites(snn_forward_cache *cache, int32_t on);
SNN_API snn_status snn_cache_inference_rewrites(const snn_forward_cache *cache, int32_t *on);

/* Seeds the cache's dropout generator and restarts its sequence: the masks of
 * the training passes that follow depend only on the seed, the number of
 * passes since this call and the layer, the same on the CPU and a GPU and
 * with any thread count. A new cache has seed 0. */
SNN_API snn_status snn_cache_set_seed(snn_forward_cache *cache, uint64_t seed);

/* Reads a forward cache's dropout generator state: the seed last set and the
 * number of training passes run since then. Together they decide the masks of
 * the next training pass; save them with a checkpoint to resume a model with
 * dropout bit for bit (see snn_checkpoint_save). Inference passes do not count.
 * The count never wraps: at 2^64 - 1 (UINT64_MAX, reachable only through
 * snn_cache_set_rng_state) a training pass is refused with SNN_ERR_STATE, as
 * it would repeat the random numbers of pass 0, until snn_cache_set_seed.
 * Errors: SNN_ERR_NULL_ARGUMENT (cache, seed or passes null). */
SNN_API snn_status snn_cache_rng_state(const snn_forward_cache *cache, uint64_t *seed,
                                       uint64_t *passes);
/* Restores it, so that the training passes that follow draw the same masks as the
 * passes that followed the state's reading, in any cache of a model with the
 * same layers, on the CPU or a GPU. snn_cache_set_rng_state(c, s, 0) is
 * snn_cache_set_seed(c, s).
 * Errors: SNN_ERR_NULL_ARGUMENT. */
SNN_API snn_status snn_cache_set_rng_state(snn_forward_cache *cache, uint64_t seed,
                                           uint64_t passes);

/* Copies `count` floats of input, [batch][features], into the cache.
 * count must be batch * features for the cache's current batch.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_COUNT. */
SNN_API snn_status snn_set_inputs(snn_forward_cache *cache, const float *inputs, size_t count);

/* Gathers samples by index into the cache, without an intermediate copy:
 * sample i of the batch is data[indices[i] * features ... + features).
 * `data` holds sample_count samples. Sets the cache's batch to n.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_BATCH (n = 0 or n > max_batch),
 * SNN_ERR_INVALID_ARGUMENT (an index < 0 or >= sample_count). */
SNN_API snn_status snn_set_inputs_gather(snn_forward_cache *cache, const float *data,
                                         size_t sample_count, const int64_t *indices, size_t n);

/* Runs the model on the cache's inputs. Reads the parameters. In training
 * mode it also writes the model's state: each batchnorm layer updates its
 * running statistics and num_batches_tracked, through this const pointer
 * (the parameters are what stays constant; see the threading rules above).
 * The pointer stays const for ABI stability (the bindings' signatures
 * depend on it); treat the model as written by a training-mode pass.
 * In inference mode it reads the state only. A cache made before the model
 * moved to another device follows it first.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_MODEL_MISMATCH (cache made for
 * another model), SNN_ERR_STATE (no inputs set; or a training-mode pass
 * when the dropout generator has counted 2^64 - 1 passes since its seed,
 * the most it can without drawing pass 0's numbers again: see
 * snn_cache_rng_state), SNN_ERR_OUT_OF_MEMORY (following the model). */
SNN_API snn_status snn_forward(snn_forward_cache *cache, const snn_model *model);

/* Zero-copy view of the outputs of the last forward pass, [batch][outputs],
 * count = batch * outputs. CPU caches only (SNN_ERR_DEVICE_MISMATCH on a GPU).
 * Valid until the next snn_forward or the cache's destruction. */
SNN_API snn_status snn_outputs(const snn_forward_cache *cache, const float **data, size_t *count);
/* Copies the outputs into dst, on any device; count must equal batch*outputs. */
SNN_API snn_status snn_get_outputs(const snn_forward_cache *cache, float *dst, size_t count);

/* ======================================================================== */
/* Sequences: token ids and lengths                                         */
/* ======================================================================== */

/* The input of a sequence model: *steps = T for 'input seq TxF' and
 * 'input tokens T vocab=V' (0 when the input is not a sequence), *vocab = V
 * for token ids (0 otherwise).
 * Errors: SNN_ERR_NULL_ARGUMENT. */
SNN_API snn_status snn_model_input_sequence(const snn_model *model, int64_t *steps, int64_t *vocab);

/* Copies token ids, [batch][T] int32 for the cache's current batch
 * (count = batch * T), into a cache of a model whose input is 'input tokens
 * T vocab=V'. Every id must lie in [0, V): nothing is copied otherwise.
 * Like snn_set_inputs, it resets the lengths to T (set them after).
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_UNSUPPORTED (the model takes
 * floats), SNN_ERR_COUNT, SNN_ERR_TOKEN (naming the sample, step and id). */
SNN_API snn_status snn_set_tokens(snn_forward_cache *cache, const int32_t *tokens, size_t count);

/* Gathers token ids by index: sample i of the batch is
 * tokens[indices[i] * T ... + T); `tokens` holds sample_count samples. Sets
 * the batch to n and resets the lengths to T.
 * Errors: as snn_set_tokens, SNN_ERR_BATCH (n = 0 or n > max_batch),
 * SNN_ERR_INVALID_ARGUMENT (an index < 0 or >= sample_count). */
SNN_API snn_status snn_set_tokens_gather(snn_forward_cache *cache, const int32_t *tokens,
                                         size_t sample_count, const int64_t *indices, size_t n);

/* The valid steps of each sample of the inputs set last (n = their batch),
 * each in [1, T]: sample s holds steps [0, lengths[s]) and padding after,
 * which every op ignores where it matters, as PyTorch's packed sequences
 * and key_padding_mask do: recurrent layers stop at each sample's length
 * (their outputs at padded steps are 0 and 'last' takes the step at
 * length - 1), attention masks padded keys, sequence pooling and the label
 * losses leave padded steps out. Other ops compute padded steps like any
 * other (their values are never read by the ones above). Setting inputs or
 * tokens resets every length to T; lengths set after a forward pass count
 * as new inputs (backprop then needs a new pass). A model whose sequence
 * layers change the number of steps (conv1d with stride, or without
 * padding) takes no lengths. Errors: SNN_ERR_NULL_ARGUMENT,
 * SNN_ERR_UNSUPPORTED (the input is not a sequence, or the steps change),
 * SNN_ERR_STATE (no inputs set for the current batch), SNN_ERR_COUNT (n
 * differs from the inputs' batch), SNN_ERR_INVALID_ARGUMENT (a length
 * outside [1, T]). The losses of float targets (MSE, Huber, smooth L1,
 * BCE with logits) average over every value, padded steps included, so
 * snn_backprop with one of them refuses a pass with lengths on a sequence
 * output (SNN_ERR_UNSUPPORTED): use a label loss, or
 * snn_backprop_with_output_gradient with zeros at the padded steps. */
SNN_API snn_status snn_set_lengths(snn_forward_cache *cache, const int32_t *lengths, size_t n);

/* Gathers lengths by index, for the samples gathered with the same indices:
 * length i is lengths[indices[i]] (sample_count values); n must equal the
 * inputs' batch. Errors: as snn_set_lengths, SNN_ERR_INVALID_ARGUMENT (an
 * index out of range). */
SNN_API snn_status snn_set_lengths_gather(snn_forward_cache *cache, const int32_t *lengths,
                                          size_t sample_count, const int64_t *indices, size_t n);


/* ======================================================================== */
/* Losses and backpropagation                                               */
/* ======================================================================== */

typedef int32_t snn_loss;
enum {
    /* mean over all batch*outputs elements of (y - t)^2 (PyTorch's default) */
    SNN_LOSS_MSE = 1,
    /* mean over the batch of -log softmax(y)[label]; labels are 0-based int32
     * class indices; stable for large logits: each row's loss is
     * (max - y[label]) + log(sum of exp(y - max)), with no log-sum-exp
     * rounded before the subtraction, so logits of 1e4 and losses of 1e-7
     * keep float precision */
    SNN_LOSS_LOGIT_CROSSENTROPY = 2,
    /* mean over all batch*outputs elements of PyTorch's HuberLoss(delta):
     * with r = y - t, 0.5 r^2 where |r| < delta, else delta (|r| - 0.5 delta);
     * the gradient is r clamped to [-delta, delta] over batch*outputs.
     * Float targets (snn_set_targets). Parameter delta: default 1, range
     * (0, FLT_MAX] as a float32 (a value that rounds to 0, such as 1e-300,
     * is refused; snn_set_loss_parameter) */
    SNN_LOSS_HUBER = 3,
    /* mean over all batch*outputs elements of PyTorch's SmoothL1Loss(beta):
     * with r = y - t, 0.5 r^2 / beta where |r| < beta, else |r| - 0.5 beta;
     * beta = 0 is the L1 loss |r|. The gradient is r / beta clamped to
     * [-1, 1] (sign(r), 0 at r = 0, for beta = 0) over batch*outputs.
     * Float targets. Parameter beta: default 1, range [0, FLT_MAX] */
    SNN_LOSS_SMOOTH_L1 = 4,
    /* mean over all batch*outputs elements of PyTorch's BCEWithLogitsLoss:
     * the outputs are logits x, the float targets t (snn_set_targets)
     * probabilities; each term is max(x, 0) - x t + log1p(exp(-|x|)) and its
     * gradient (sigmoid(x) - t) over batch*outputs, computed without
     * overflow for logits of +-1e4 and without rounding 1 - sigmoid to 0, so
     * losses of 1e-13 (logit 30, target 1) keep float precision. Targets
     * are not checked to lie in [0, 1] (nor are they by PyTorch): others
     * give the same formula, which may then be negative. No parameter */
    SNN_LOSS_BCE_WITH_LOGITS = 5
};

/* Allocates the gradient buffers for `model` and batches up to max_batch.
 * Errors as snn_preallocate. */
SNN_API snn_status snn_preallocate_grads(const snn_model *model, int64_t max_batch,
                                         snn_backward_cache **out);
SNN_API void snn_backward_cache_destroy(snn_backward_cache *cache);

/* Target values for SNN_LOSS_MSE, [batch][outputs], copied. count must be
 * max_batch*outputs at most and a multiple of outputs; the batch used by the
 * next snn_backprop must match (checked there).
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_COUNT. */
SNN_API snn_status snn_set_targets(snn_backward_cache *cache, const float *targets, size_t count);

/* Class labels for SNN_LOSS_LOGIT_CROSSENTROPY, one per sample, copied; n
 * labels for n samples. For a model whose output is a sequence of T steps
 * of K values, one label per step: n = batch * T labels [batch][T], each in
 * [0, K) or -1 to ignore the step; the loss is the mean over the steps
 * counted, which leave out -1 and the padded steps of samples with lengths
 * (snn_set_lengths), as PyTorch's ignore_index does (0 when none is left).
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_BATCH (n = 0 or n > max_batch
 * samples), SNN_ERR_COUNT (n not a multiple of T), SNN_ERR_LABEL (a label
 * < 0 or >= outputs, other than a sequence's -1; the message names it). */
SNN_API snn_status snn_set_labels(snn_backward_cache *cache, const int32_t *labels, size_t n);

/* Gathers labels by index, as snn_set_inputs_gather: label i is
 * labels[indices[i]] (for a sequence output, the T labels from
 * labels[indices[i] * T]; sample_count counts samples). Errors as snn_set_labels, and SNN_ERR_INVALID_ARGUMENT
 * for an index out of [0, sample_count). */
SNN_API snn_status snn_set_labels_gather(snn_backward_cache *cache, const int32_t *labels,
                                         size_t sample_count, const int64_t *indices, size_t n);

/* With enabled != 0, backprop also computes the gradient of the loss with
 * respect to the inputs (snn_input_gradients). Off by default.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_UNSUPPORTED (enabled != 0 for a
 * model whose input is token ids, which have no gradient). */
SNN_API snn_status snn_set_input_gradient(snn_backward_cache *cache, int32_t enabled);

/* Sets the parameter of a loss that has one, for the snn_backprop calls of
 * this cache with that loss; each loss keeps its own value and a new cache
 * starts from the defaults given with the loss's constant. The value is
 * stored as given and rounded to float32 when a backprop uses it.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_INVALID_ARGUMENT (an unknown loss,
 * a loss without a parameter, NaN, Inf or a value outside the loss's range;
 * the message names the range); the value is then left unchanged. */
SNN_API snn_status snn_set_loss_parameter(snn_backward_cache *cache, snn_loss loss, double value);
/* Writes the parameter of `loss` on this cache (its default until set) to
 * *value. Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_INVALID_ARGUMENT (an
 * unknown loss or a loss without a parameter). */
SNN_API snn_status snn_get_loss_parameter(const snn_backward_cache *cache, snn_loss loss,
                                          double *value);

/* Computes the loss of the last forward pass of `fwd` against the targets or
 * labels set on `bwd`, and the gradient of that loss with respect to every
 * parameter (overwriting, not accumulating). The gradient is exactly the
 * derivative of the value written to *loss_value (which may be NULL: on a GPU
 * that avoids reading the value back).
 * It differentiates the pass as it ran: in its mode, at its batch, with its
 * dropout masks, so snn_cache_set_training, snn_cache_set_batch,
 * snn_cache_set_seed and snn_cache_set_rng_state after snn_forward apply to
 * the next pass only. A call that changes what the pass read fails it with
 * SNN_ERR_STATE naming that call, until the next snn_forward (PyTorch
 * raises likewise when a tensor saved for backward is modified): new inputs
 * (snn_set_inputs and its _gather, _device and _from_dataset forms), new
 * parameters (snn_set_parameters, snn_model_init, snn_optimiser_step) and,
 * after an inference-mode pass, new running statistics (snn_set_state,
 * snn_model_init, a training-mode pass of another cache). Writes through
 * snn_parameters' pointer are not seen: make them before snn_forward.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_INVALID_ARGUMENT (unknown loss),
 * SNN_ERR_MODEL_MISMATCH, SNN_ERR_STATE (no forward pass, a pass changed
 * since as above, or no targets/labels for this batch size),
 * SNN_ERR_OUT_OF_MEMORY (following a
 * model that moved), SNN_ERR_BATCH (fwd's batch
 * above bwd's maximum), SNN_ERR_NOT_FINITE (with the finite check on),
 * SNN_ERR_UNSUPPORTED (a loss of float targets, SNN_LOSS_MSE, _HUBER,
 * _SMOOTH_L1 or _BCE_WITH_LOGITS, on a sequence output whose pass had
 * lengths set: it would average over the padded steps; see
 * snn_set_lengths). */
SNN_API snn_status snn_backprop(snn_backward_cache *bwd, snn_forward_cache *fwd,
                                const snn_model *model, snn_loss loss, float *loss_value);

/* Backpropagates a caller-supplied gradient of the loss with respect to the
 * outputs, [batch][outputs] host memory (custom losses, reinforcement
 * learning). count must be batch*outputs. Errors as snn_backprop, and
 * SNN_ERR_COUNT. */
SNN_API snn_status snn_backprop_with_output_gradient(snn_backward_cache *bwd,
                                                     snn_forward_cache *fwd,
                                                     const snn_model *model,
                                                     const float *output_gradient, size_t count);

/* Zero-copy view of the flat gradient (parameter layout) of the last
 * backprop; CPU caches only. Valid until the cache is destroyed. */
SNN_API snn_status snn_gradients(const snn_backward_cache *cache, const float **data,
                                 size_t *count);
/* Copies the gradient into dst, on any device; count = parameter count. */
SNN_API snn_status snn_get_gradients(const snn_backward_cache *cache, float *dst, size_t count);

/* Overwrites the flat gradient held by the cache (e.g. with the average over
 * data-parallel workers) before snn_optimiser_step; count = parameter count.
 * Marks the cache as holding a gradient. Works on any device; on a GPU the
 * write comes after the steps already queued that read the old gradient.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_COUNT, SNN_ERR_NOT_FINITE (with the
 * finite check on). */
SNN_API snn_status snn_set_gradients(snn_backward_cache *cache, const float *src, size_t count);

/* Copies the gradient with respect to the inputs, [batch][features], of the
 * last backprop; requires snn_set_input_gradient(cache, 1) before it
 * (SNN_ERR_STATE otherwise). count = batch*features. */
SNN_API snn_status snn_get_input_gradients(const snn_backward_cache *cache, float *dst,
                                           size_t count);

/* ======================================================================== */
/* Optimisers                                                               */
/* ======================================================================== */

typedef int32_t snn_optimiser_kind;
enum {
    SNN_OPTIMISER_SGD = 1,     /* lr 0.01, momentum 0, nesterov 0 */
    SNN_OPTIMISER_ADAM = 2,    /* lr 0.001, beta1 0.9, beta2 0.999, eps 1e-8 */
    SNN_OPTIMISER_ADAMW = 3,   /* as Adam, weight_decay 0.01 (decoupled) */
    SNN_OPTIMISER_RMSPROP = 4, /* lr 0.01, alpha 0.99, eps 1e-8 */
    SNN_OPTIMISER_LION = 5     /* lr 1e-4, beta1 0.9, beta2 0.99, weight_decay 0 (decoupled);
                                  Chen et al. 2023, as the lion-pytorch package */
};

/* Hyperparameters and their ranges. The updates run in float32, so every
 * value must be finite there: FLT_MAX is 3.40282347e+38 and FLT_MIN, the
 * smallest normal float32, 1.17549435e-38 (the updates flush subnormals to
 * zero, so a smaller epsilon would act as 0). learning_rate x weight_decay
 * must not exceed FLT_MAX either (AdamW applies their product as one
 * factor). Betas and alpha are checked as doubles: 1 - beta is computed in
 * double, so a beta such as 0.99999999, which rounds to 1.0f, still works. */
typedef int32_t snn_hyperparameter;
enum {
    SNN_HP_LEARNING_RATE = 1, /* [0, FLT_MAX] */
    SNN_HP_MOMENTUM = 2,      /* SGD: [0, 1) */
    SNN_HP_NESTEROV = 3,      /* SGD: 0 or 1 (needs momentum > 0 and dampening 0) */
    SNN_HP_BETA1 = 4,         /* Adam(W), Lion: [0, 1) */
    SNN_HP_BETA2 = 5,         /* Adam(W), Lion: [0, 1) */
    SNN_HP_EPSILON = 6,       /* Adam(W), RMSProp: [FLT_MIN, FLT_MAX] */
    SNN_HP_WEIGHT_DECAY = 7,  /* [0, FLT_MAX]; L2 for SGD/Adam/RMSProp, decoupled for AdamW, Lion */
    SNN_HP_ALPHA = 8,         /* RMSProp smoothing: [0, 1) */
    SNN_HP_DAMPENING = 9,     /* SGD: [0, 1], default 0; PyTorch's dampening: from the second step
                                 the momentum buffer is momentum * buf + (1 - dampening) * g.
                                 Nesterov needs dampening 0 (either order of setting is refused) */
    SNN_HP_MAX_GRAD_NORM = 10 /* every kind: [0, FLT_MAX], default 0 = off. Clipping by the global
                                 gradient norm, as torch.nn.utils.clip_grad_norm_(params, max_norm)
                                 before the step: each step scales the gradient it uses by
                                 min(1, max_norm / (norm + 1e-6)), norm the L2 norm of the whole
                                 flat gradient (summed in double, in a fixed order: the same value
                                 for any thread count, on the GPU without host synchronisation).
                                 Only the update sees the clipped gradient: the backward cache's
                                 gradient (snn_get_gradients) is left as backprop wrote it. A
                                 non-finite norm behaves as PyTorch's default
                                 (error_if_nonfinite=False): NaN makes the step NaN, infinity
                                 scales by 0. See snn_optimiser_grad_norm. */
};

/* Creates an optimiser for `model` with PyTorch's defaults (above), its state
 * (moments) allocated on the model's device and zeroed. Hyperparameters are
 * kept as doubles; the factors of a step (1 - beta1, 1 - beta2, 1 - alpha,
 * lr * weight_decay, the bias corrections 1 - beta^t) are computed in double
 * and rounded once to float, so beta2 = 0.99999 is as exact as 0.999.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_INVALID_ARGUMENT (unknown kind),
 * SNN_ERR_OUT_OF_MEMORY. */
SNN_API snn_status snn_optimiser_create(const snn_model *model, snn_optimiser_kind kind,
                                        snn_optimiser **out);
SNN_API void snn_optimiser_destroy(snn_optimiser *optimiser);

/* Sets / reads a hyperparameter; may be called between steps (schedules).
 * Errors: SNN_ERR_INVALID_ARGUMENT for a parameter the kind lacks or a value
 * out of its range above (NaN and infinities included; for the learning rate
 * and the weight decay, also a product of the two above FLT_MAX: lower the
 * other first). A failed call changes nothing. */
SNN_API snn_status snn_optimiser_set(snn_optimiser *optimiser, snn_hyperparameter which,
                                     double value);
SNN_API snn_status snn_optimiser_get(const snn_optimiser *optimiser, snn_hyperparameter which,
                                     double *value);

/* Updates the model's parameters in place from the gradient in `grads`.
 * An optimiser or cache made before the model moved follows it first (its
 * moments and step count move with it: training resumes exactly).
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_MODEL_MISMATCH, SNN_ERR_STATE (no
 * backprop yet, or the optimiser has counted 2^53 steps, the most it counts:
 * snn_optimiser_reset starts again), SNN_ERR_OUT_OF_MEMORY (following the
 * model). */
SNN_API snn_status snn_optimiser_step(snn_optimiser *optimiser, snn_model *model,
                                      const snn_backward_cache *grads);

/* Zeroes the optimiser's moments and step count, after every step queued
 * so far (on a GPU it waits for them). */
SNN_API snn_status snn_optimiser_reset(snn_optimiser *optimiser);
/* Number of steps taken since creation or reset. */
SNN_API snn_status snn_optimiser_step_count(const snn_optimiser *optimiser, int64_t *steps);
/* The L2 norm of the whole gradient that the last step clipped with
 * (SNN_HP_MAX_GRAD_NORM > 0), before clipping: clip_grad_norm_'s return
 * value. On a GPU it waits for that step. Errors: SNN_ERR_NULL_ARGUMENT,
 * SNN_ERR_STATE (no step since creation or reset, or the last step did not
 * clip); *norm is then untouched. */
SNN_API snn_status snn_optimiser_grad_norm(const snn_optimiser *optimiser, double *norm);

/* ======================================================================== */
/* Mixed precision                                                          */
/* ======================================================================== */

/* The precision of a forward cache's passes, torch.autocast's rule: the
 * matrix products of dense, conv, conv1d, attention, lstm and gru layers
 * (forward and backward) round their operands to bf16 or fp16 and
 * accumulate in float32; everything else computes in float32 as before
 * (activations, normalisations and their statistics, softmax, pooling,
 * losses, reductions, optimiser steps). The parameters and the optimiser's
 * state stay float32 in the one flat vector (the master copy), activations
 * in the cache stay float32, and gradients arrive float32 in the flat
 * gradient vector. The backward pass runs at the precision of the forward
 * pass it differentiates (a backward cache makes its plans again, once,
 * when that precision changes: keep one backward cache per precision when
 * alternating).
 *
 * Where each runs:
 *   SNN_PRECISION_FLOAT32  everywhere (the default).
 *   SNN_PRECISION_BF16     CPU: natively on processors with AVX-512 BF16
 *                          (vdpbf16ps); elsewhere, with
 *                          SNN_CPU_KERNELS=reference and under an
 *                          SNN_CPU_ISA cap below avx512_bf16, emulated (the same
 *                          rounding of operands, float32 products: the same
 *                          accuracy, no speed-up); snn_precision_support
 *                          tells which. GPU: compute capability 8.0 or newer
 *                          (cuBLAS tensor-core products with float32
 *                          accumulation; convolutions lowered to them, as
 *                          cuDNN would round their outputs to 16 bits).
 *   SNN_PRECISION_FP16     GPUs only (the CPU refuses it); use it with loss
 *                          scaling (snn_set_loss_scaling), as fp16's range
 *                          is small (operands of 65520 and more become
 *                          infinite, of 2^-25 and less zero).
 * A precision a device cannot run is SNN_ERR_UNSUPPORTED, never a silent
 * float32.
 *
 * bf16 on the CPU is a request for speed, not for bf16's rounding: a
 * convolution whose shape computes faster in float32 there runs the
 * float32 kernels at bf16 precision too, and its results are float32's,
 * bit for bit (both passes). These are the layers with few taps
 * (cin*kh*kw <= 32 at stride 1, e.g. a first layer on 1 or 3 channels) and
 * the small ones: "same"-padded stride-1 layers of under 512k
 * multiply-adds per image, other stride-1 layers of under 4M, strided
 * ones of under 4608 weights (cout*cin*kh*kw; the figures behind the rule
 * are in lib/cpu/conv.cpp). Likewise a matrix
 * product of at most 4 rows or of depth at most 4 runs in float32
 * (lib/cpu/product_paths.cpp): a dense layer (and the products of conv1d,
 * attention, lstm and gru) over 1 to 4 rows (samples times steps) computes
 * float32 at bf16. The rules depend on the shapes alone, so the same layers
 * round on every processor, natively or emulated.
 *
 * Accuracy at bf16 on the CPU (tests/golden/test_autocast.cpp: one training
 * pass against float64 from the same float32 parameters and inputs,
 * e = ||v - r|| / ||r||; an MLP, the default CNN's layout, a resnet block,
 * conv1d + lstm + attention):
 *   array             bound   snn bf16 (measured)   torch.autocast bf16
 *   outputs           2^-7    0.0004 - 0.0028       0.0028 - 0.0040
 *   loss              2^-8    2e-7   - 0.0006       1e-5   - 0.0018
 *   gradients         2^-4    0.0022 - 0.030        0.0043 - 0.035
 *   input gradients   2^-2    0.0038 - 0.111        0.0040 - 0.106
 * (float32 on the same cases: within 2^-16, 2^-18, 2^-14 and 2^-14.) snn
 * keeps float32 activations and rounds only the operands of its products;
 * autocast also rounds each bf16 op's output, so snn's bf16 outputs are
 * closer to float32's than autocast's (asserted); snn bf16 against autocast
 * stays within 2^-6 (outputs), 2^-8 (loss), 2^-4 (gradients) and 2^-3
 * (input gradients). The widest gradient errors come from max pooling: a
 * window's gradient goes to its largest input, and bf16's rounding can pick
 * another of near-equal inputs (autocast alike). Per op (tests/ops, mode
 * Bf16), |v_bf16 - v_f32| <= 2^-8 * 2D * sqrt(K) * max|v_f32| for D product
 * layers of length at most K. The native kernels (vdpbf16ps) count
 * subnormal operands as zero; the emulated path keeps them.
 * On a GPU (tests/gpu/test_gpu_precision.cpp; u = 2^-8 for bf16, 2^-11 for
 * fp16): the first step's loss within 16u of float32's (relative), its
 * gradients within 32u (normwise), the same kernels' arithmetic checked on
 * the CPU against float32 products of rounded operands (tests/gpu_emulated,
 * within float32 summation tolerance). Measured on an H200 (CUDA 13.0,
 * cuDNN 9.19): first gradients off by 6.1u (default CNN) and 0.8u
 * (conv1d + lstm + gru + attention) at bf16, 15.0u and 0.6u at fp16; first
 * losses within 0.01u. */
typedef int32_t snn_precision;
enum {
    SNN_PRECISION_FLOAT32 = 0,
    SNN_PRECISION_BF16 = 1,
    SNN_PRECISION_FP16 = 2
};

/* Sets the precision of the cache's next passes. Makes the layers' plans
 * again (an allocation: call it before the training loop, not in it). A
 * backward cache follows the precision of the pass it differentiates: its
 * first snn_backprop after a pass in another precision than its last makes
 * its plans again too (a one-off allocation, in the first step of a loop
 * whose forward cache was set to bf16 or fp16). A cache that follows its
 * model to another device keeps its precision.
 * Errors: SNN_ERR_INVALID_ARGUMENT (not a precision), SNN_ERR_UNSUPPORTED
 * (the cache's device cannot run it, or a layer of the model has no kernels
 * for it there; the message names the layer), SNN_ERR_OUT_OF_MEMORY; the
 * cache is unchanged on failure. */
SNN_API snn_status snn_cache_set_precision(snn_forward_cache *cache, snn_precision precision);
SNN_API snn_status snn_cache_precision(const snn_forward_cache *cache, snn_precision *precision);

/* SNN_OK when `device` (SNN_DEVICE_CPU or a GPU index) can compute in
 * `precision`; *native (when not NULL) is 1 when it runs natively, 0 when
 * emulated (see above). Errors: SNN_ERR_INVALID_ARGUMENT, SNN_ERR_UNSUPPORTED
 * with the reason, and those of snn_gpu_status for a GPU index. */
SNN_API snn_status snn_precision_support(int32_t device, snn_precision precision, int32_t *native);

/* Dynamic loss scaling, torch.cuda.amp.GradScaler's rule, on a backward
 * cache. While on, snn_backprop multiplies the loss's gradient by the scale
 * S before the backward pass (so small fp16 gradients do not flush to zero),
 * then divides the parameter gradients (and the input gradient) by S and
 * checks them:
 *   - all finite: the gradients are the true float32 gradients, and after
 *     growth_interval such steps in a row S is multiplied by growth_factor
 *     (kept finite as a float);
 *   - NaN or Inf (an overflow): snn_backprop still returns SNN_OK (with the
 *     loss when it is finite), the step is marked skipped, S is multiplied by
 *     backoff_factor but kept at least FLT_MIN (2^-126, the smallest normal
 *     float, whose inverse is still finite: at that scale a gradient that is
 *     finite in float32 is taken, so only a gradient that overflows without
 *     scaling skips every step) and the count of good steps restarts; the next
 *     snn_optimiser_step with this cache returns SNN_OK without changing the
 *     parameters or the optimiser's step count.
 * Gradients replaced after snn_backprop by snn_set_gradients (summed over
 * data-parallel ranks, say) decide instead: the backprop's update of the
 * scale is redone with their finiteness, so ranks that set the same sum
 * skip or step alike and keep the same scale. Gradients changed in place
 * (snn_gradients_device) are checked again by snn_optimiser_step, which
 * refuses a non-finite one its backprop did not find (SNN_ERR_NOT_FINITE,
 * parameters unchanged).
 * With snn_set_check_finite on, a non-finite loss is still
 * SNN_ERR_NOT_FINITE. snn_set_loss_scaling(c, 1)
 * turns it on with PyTorch's defaults (S = 65536, growth 2, backoff 0.5,
 * interval 2000) unless it is on already; (c, 0) turns it off (and forgets
 * its state). Works at every precision and on every device. */
SNN_API snn_status snn_set_loss_scaling(snn_backward_cache *cache, int32_t on);
/* Turns loss scaling on with these settings and state: scale a finite float
 * of at least FLT_MIN (a scale that is 0 or subnormal as a float is refused:
 * from 2^-128 down its inverse overflows a float and every step would be
 * skipped), growth_factor > 1,
 * backoff_factor in (0, 1), growth_interval in [1, 2^53], good_steps in
 * [0, growth_interval). Errors: SNN_ERR_INVALID_ARGUMENT naming the value
 * (nothing changed). */
SNN_API snn_status snn_set_loss_scaling_state(snn_backward_cache *cache, double scale, double growth_factor,
                                              double backoff_factor, int64_t growth_interval,
                                              int64_t good_steps);
/* Reads the loss scaling: on (0 or 1), the scale for the next snn_backprop
 * (1 when off), the settings, the good steps counted towards the next
 * growth, and whether the last snn_backprop overflowed (its step is
 * skipped). Every out pointer may be NULL. */
SNN_API snn_status snn_loss_scaling_state(const snn_backward_cache *cache, int32_t *on, double *scale,
                                          double *growth_factor, double *backoff_factor,
                                          int64_t *growth_interval, int64_t *good_steps, int32_t *skipped);

/* ======================================================================== */
/* Model files and checkpoints                                              */
/* ======================================================================== */

/* Model files are safetensors: an 8-byte little-endian header length, a JSON
 * header, then raw little-endian tensors. "__metadata__" holds
 * "format": "snn", "format_version" and "spec" (the canonical spec). Each
 * layer's tensors are named as a PyTorch state_dict names them,
 * "layers.<i>.<name>", i the layer index (layer 0 is the input):
 *   dense      weight [out, in], bias [out]
 *   conv       weight [out, in, kh, kw], bias [out]
 *   batchnorm  weight [C], bias [C], running_mean [C], running_var [C] (F32),
 *              num_batches_tracked [] (I64: a negative count is refused,
 *              one above 2^24 is held as 2^24, see snn_get_state)
 *   layernorm  weight and bias of the sample's shape ([F] or [C, H, W])
 *   attention  in_proj_weight [3E, E], in_proj_bias [3E],
 *              out_proj.weight [E, E], out_proj.bias [E]
 *   lstm, gru  weight_ih_l0 [G*H, F], weight_hh_l0 [G*H, H], bias_ih_l0 [G*H],
 *              bias_hh_l0 [G*H] (G = 4 gates i, f, g, o; 3 for gru: r, z, n),
 *              then the same with suffix _reverse when bidirectional
 * A torch module whose submodules are registered as layers.<i> loads these
 * tensors with load_state_dict(strict=True); PyTorch's safetensors readers
 * open the files. */

/* Saves atomically: writes <path>.tmp-<16 hex digits> in the same directory
 * (created exclusively, the digits fresh from the system's entropy source
 * on every save, so processes and their forks never share a name), flushes
 * it to the disk (fsync; FlushFileBuffers on Windows), then renames it over
 * `path` (rename and an fsync of the directory; on Windows MoveFileExW,
 * replacing and writing through). A failed save removes its temporary file and
 * leaves any existing file untouched. Works for a model on any device.
 * A save that is killed (SIGKILL, power loss) before the rename leaves
 * `path` as it was and its temporary file behind, partly written. Every
 * save removes the temporary files of the same `path` (exactly that name
 * pattern, regular files) that have not been modified for more than a
 * minute; younger ones are kept, as they may be saves in progress.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_IO (message names the path and the
 * system's reason). */
SNN_API snn_status snn_model_save(const snn_model *model, const char *path);

/* Loads a model file onto the CPU (a model saved from a GPU loads on a
 * machine without one). Only a regular file is read: a directory, FIFO,
 * device or socket is refused without blocking. Everything is validated
 * before use, in the order of the file, so nothing beyond what the header
 * declares is read: the header length (against the file's size and a limit
 * of 100 MB), the JSON (a key twice in one object is an error), metadata,
 * every tensor's presence, dtype, shape, offsets (in range, non-overlapping,
 * covering the rest of the file exactly). A tensor the spec does not imply
 * is an error, and so is optimiser state or an "optimiser.*" setting that is
 * not part of a valid checkpoint (see snn_checkpoint_load): a checkpoint
 * loads as a model only when its optimiser part is valid too.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_IO (no such file, not a regular
 * file, a read failed), SNN_ERR_FILE_FORMAT (message says what is wrong),
 * SNN_ERR_SPEC / SNN_ERR_SHAPE (bad spec inside). */
SNN_API snn_status snn_model_load(const char *path, snn_model **out);

/* The same format in memory (game assets). With buf NULL and capacity 0,
 * only *size is written (the bytes needed). Errors: SNN_ERR_COUNT when
 * capacity < size (nothing written). */
SNN_API snn_status snn_model_save_to_buffer(const snn_model *model, void *buf, size_t capacity,
                                            size_t *size);
/* Reads `size` bytes; the buffer is not kept. Errors as snn_model_load
 * (NULL with size 0 is an empty buffer: SNN_ERR_FILE_FORMAT). */
SNN_API snn_status snn_model_load_from_buffer(const void *data, size_t size, snn_model **out);

/* ======================================================================== */
/* ONNX                                                                     */
/* ======================================================================== */
/* Export to and import from ONNX files, the format ONNX Runtime, TensorRT
 * and PyTorch's exporter speak. A build without it (Meson option onnx=false)
 * answers every call here with SNN_ERR_UNSUPPORTED; snn_has_feature("onnx")
 * says which. snn reads and writes the protobuf wire format itself: libsnn
 * links no protobuf library.
 *
 * Export writes opset 17 (IR version 8): graph input "input" ([batch, F];
 * images [batch, C, H, W]; sequences [batch, T, F]; token ids int64
 * [batch, T]) with a symbolic batch "batch", graph output "output" in snn's
 * output layout ([batch, outputs], [batch, C, H, W] or [batch, T, F]). These
 * are snn's own layouts, which are PyTorch's: an image goes in as NCHW, as
 * a PyTorch user feeds it, with no Transpose. Every parameter is a float32
 * initializer holding its exact values, named as in snn's model files
 * ("layers.<i>.<suffix>", PyTorch's shapes), but lstm and gru, whose
 * weights are ONNX's W, R and B ("layers.<i>.W", ".R", ".B": PyTorch's
 * values with the gates in ONNX's order, the biases as [b_ih; b_hh]);
 * batchnorm's num_batches_tracked is not written. The graph computes what
 * snn does in inference mode: batchnorm as BatchNormalization with the
 * running statistics, dropout as Dropout without training_mode (the
 * identity; its ratio kept for import), gelu in its Erf form
 * x/2 (1 + erf(x / sqrt 2)), silu as x Sigmoid(x), attention as
 * MatMul/Softmax (causal: a constant -inf mask), LSTM and GRU as the ONNX
 * ops (layout 0, GRU with linear_before_reset = 1). With lengths, the
 * second input also masks seqpool and attention's keys, zeroes conv1d's
 * input past each length and gives the recurrent layers sequence_lens. A
 * model ONNX cannot express is refused with SNN_ERR_UNSUPPORTED naming the
 * layer; today that is only lengths asked of a model that takes none (its
 * input is not a sequence, or a layer changes the number of steps).
 *
 * Import maps what torch.onnx.export writes for the models snn holds
 * (opsets 13 to 21) onto snn's ops; the new model is on the CPU, its spec
 * as snn_model_describe prints it, ready to run and to train (fine-tuning).
 * Errors: SNN_ERR_FILE_FORMAT for a broken file, SNN_ERR_UNSUPPORTED for a
 * valid file snn cannot represent; that message lists every node that
 * cannot be mapped, one line each: op type, node name, why. Refused: external
 * data files, subgraphs (If, Loop, Scan), sparse initializers, files above
 * 2 GiB, more than one input (lengths aside) or output, and a symbolic
 * sequence length without sequence_length in the options. */

/* Options of export; NULL for the defaults. `size` must be
 * sizeof(snn_onnx_export_options) of the caller's header (a larger
 * unknown size is refused with SNN_ERR_INVALID_ARGUMENT, a smaller one
 * reads only the fields it covers). */
typedef struct snn_onnx_export_options {
    size_t size;
    /* 1: a model with a sequence input gets a second graph input "lengths"
     * (int32 [batch], valid steps per sample, as snn_set_lengths) feeding
     * the recurrent layers' sequence_lens, attention's key mask, seqpool
     * and conv1d. */
    int32_t lengths;
} snn_onnx_export_options;

/* Options of import; NULL for the defaults, `size` as above. */
typedef struct snn_onnx_import_options {
    size_t size;
    /* Steps of a sequence input whose length the file leaves symbolic;
     * 0: none given (such a file is then refused). */
    int64_t sequence_length;
    /* The batch at which shape subgraphs that read the batch are folded;
     * 0 when the file's batch is symbolic and nothing needs it. */
    int64_t batch;
} snn_onnx_import_options;

/* Writes the model as an ONNX file, atomically as snn_model_save. Works for
 * a model on any device. Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_INVALID_ARGUMENT
 * (options), SNN_ERR_UNSUPPORTED (see above), SNN_ERR_IO. */
SNN_API snn_status snn_model_export_onnx(const snn_model *model, const snn_onnx_export_options *options,
                                         const char *path);
/* The same file in memory. With buf NULL and capacity 0, only *size is
 * written. Errors as snn_model_export_onnx, SNN_ERR_COUNT when capacity <
 * size (nothing written). */
SNN_API snn_status snn_model_export_onnx_to_buffer(const snn_model *model, const snn_onnx_export_options *options,
                                                   void *buf, size_t capacity, size_t *size);
/* Reads an ONNX file (a regular file only, as snn_model_load) into a new
 * CPU model. Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_INVALID_ARGUMENT
 * (options), SNN_ERR_IO, SNN_ERR_FILE_FORMAT, SNN_ERR_UNSUPPORTED. */
SNN_API snn_status snn_model_import_onnx(const char *path, const snn_onnx_import_options *options,
                                         snn_model **out);
/* The same from `size` bytes of memory; the buffer is not kept. */
SNN_API snn_status snn_model_import_onnx_from_buffer(const void *data, size_t size,
                                                     const snn_onnx_import_options *options, snn_model **out);

/* A training checkpoint: the model file plus the optimiser's kind,
 * hyperparameters, step count and moments ("optimiser.m", "optimiser.v"),
 * so training resumed from it continues bit-identically. Saved atomically.
 * A model with dropout needs one more thing, kept by the caller beside the
 * file: the dropout generator of the training cache, which belongs to the
 * cache, not the model. To resume bit for bit:
 *   save:    snn_checkpoint_save(model, opt, path);
 *            snn_cache_rng_state(train_cache, &seed, &passes);  (keep both)
 *   resume:  snn_checkpoint_load(path, &model, &opt);
 *            snn_preallocate(model, max_batch, &train_cache);  (and grads)
 *            snn_cache_set_rng_state(train_cache, seed, passes);
 * then feed the same batches as the uninterrupted run would have. */
SNN_API snn_status snn_checkpoint_save(const snn_model *model, const snn_optimiser *optimiser,
                                       const char *path);
/* Creates a CPU model and its optimiser from a checkpoint; both are the
 * caller's to destroy. The optimiser's settings are checked as
 * snn_optimiser_set checks them, the step count is in [0, 2^53], and every
 * "optimiser.*" key belongs to the kind. A checkpoint written before
 * SNN_HP_DAMPENING and SNN_HP_MAX_GRAD_NORM existed lacks their keys and
 * loads with their defaults (0); every other setting of the kind must be
 * there. Errors as snn_model_load; any setting snn_optimiser_set would
 * refuse is SNN_ERR_FILE_FORMAT. */
SNN_API snn_status snn_checkpoint_load(const char *path, snn_model **model_out,
                                       snn_optimiser **optimiser_out);
/* snn_checkpoint_save, plus the loss scaling of `cache` when it is not NULL
 * and scaling is on (its settings, scale and good steps, as metadata
 * "loss_scaling.*"), so training with a GradScaler resumes where it was.
 * snn_checkpoint_load reads such a checkpoint as any other (checking the
 * loss scaling too, its growth interval and good steps as decimal
 * integers); snn_checkpoint_load_loss_scaling then gives a backward cache
 * its scaling back. Errors as snn_checkpoint_save, and
 * SNN_ERR_MODEL_MISMATCH when `cache` was made for another model. */
SNN_API snn_status snn_checkpoint_save_v2(const snn_model *model, const snn_optimiser *optimiser,
                                          const snn_backward_cache *cache, const char *path);
/* Sets the cache's loss scaling to the checkpoint's: on with its settings
 * and state, or off when the checkpoint holds none. It reads and checks the
 * whole checkpoint as snn_checkpoint_load does, so it refuses every file
 * that snn_checkpoint_load refuses. Errors as snn_checkpoint_load
 * (SNN_ERR_FILE_FORMAT for a model file, an optimiser part or loss scaling
 * snn_optimiser_set or snn_set_loss_scaling_state would refuse); the cache is
 * unchanged on failure. */
SNN_API snn_status snn_checkpoint_load_loss_scaling(const char *path, snn_backward_cache *cache);

/* ======================================================================== */
/* Devices                                                                  */
/* ======================================================================== */

/* Number of GPUs snn can use (CUDA_VISIBLE_DEVICES applies, as CUDA defines
 * it). 0 when the CUDA plugin, the driver or a device is missing; never
 * fails. snn_gpu_status tells why. */
SNN_API int32_t snn_gpu_count(void);

/* SNN_OK when GPU `device` can be used; otherwise the reason, each with its
 * own status and message: SNN_ERR_GPU_PLUGIN_NOT_FOUND (libsnn_cuda.so,
 * snn_cuda.dll on Windows, not at $SNN_CUDA_PLUGIN when that is set, else
 * not next to libsnn.so / snn.dll, or, in a program that links the static
 * library, not next to its executable; the directory is found when libsnn
 * is loaded (on Windows, from the module's full path), so the program may
 * change directory after being started by any path or through PATH), SNN_ERR_GPU_DRIVER (CUDA driver
 * or runtime missing or too old), SNN_ERR_NO_GPU (CUDA sees no device),
 * SNN_ERR_GPU_INDEX (device out of range). */
SNN_API snn_status snn_gpu_status(int32_t device);

/* Moves the model's parameters to GPU `device` / to the CPU. Moving to the
 * device it is on does nothing. Caches and optimisers made before the move
 * follow the model on their next use with it (see Devices above).
 * Pointers from snn_parameters become invalid. On failure the model stays
 * where it was. Errors: those of snn_gpu_status, SNN_ERR_OUT_OF_MEMORY,
 * SNN_ERR_CUDA. */
SNN_API snn_status snn_to_gpu(snn_model *model, int32_t device);
SNN_API snn_status snn_to_cpu(snn_model *model);

/* Moves the model to GPU 0 when one can be used, else keeps it on the CPU
 * (and then returns SNN_OK). *device receives where it ended up. */
SNN_API snn_status snn_to_best_device(snn_model *model, int32_t *device);

/* SNN_DEVICE_CPU or the GPU index the model lives on. */
SNN_API snn_status snn_model_device(const snn_model *model, int32_t *device);

/* With on != 0, GPU dense and convolution layers of caches created afterwards
 * may use TF32 tensor-core math (faster, about 10 mantissa bits in the
 * products). Off by default. No effect on the CPU. */
SNN_API snn_status snn_set_allow_tf32(int32_t on);

/* Copies inputs that already live in GPU memory on the cache's device (a
 * CUDA.jl CuArray, a CuPy array, a PyTorch tensor's data_ptr) into the cache,
 * device to device, without a round trip through the host. count must be
 * batch * features.
 * Ordering: the copy starts after all work the calling thread queued before
 * the call on the default streams of the cache's GPU (the legacy default
 * stream and the per-thread default stream), so kernels queued there may
 * still be writing device_inputs when the call is made. Work on other CUDA
 * streams is not waited for: synchronize those first. The copy has
 * completed when the call returns (it waits for the cache's earlier passes,
 * whose inputs it replaces): the caller may then overwrite or free
 * device_inputs at once. The library keeps no pointer to it.
 * Errors: SNN_ERR_DEVICE_MISMATCH for a CPU cache, SNN_ERR_COUNT,
 * SNN_ERR_CUDA. */
SNN_API snn_status snn_set_inputs_device(snn_forward_cache *cache, const float *device_inputs,
                                         size_t count);

/* A data set uploaded once to a device (Flux's "move the whole data set to
 * the GPU"), from which batches are gathered by index on the device. */
typedef struct snn_dataset snn_dataset;

/* Copies sample_count samples of `features` floats each, and optionally one
 * int32 label per sample (labels may be NULL), to `device` (SNN_DEVICE_CPU
 * or a GPU index). The caller's arrays are not kept.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_INVALID_ARGUMENT (zero sizes or a
 * negative label), the device errors of snn_gpu_status,
 * SNN_ERR_OUT_OF_MEMORY. */
SNN_API snn_status snn_dataset_create(int32_t device, const float *samples, size_t sample_count,
                                      size_t features, const int32_t *labels,
                                      snn_dataset **out);
SNN_API void snn_dataset_destroy(snn_dataset *dataset);

/* Gathers samples indices[0..n) of the data set into the cache (the batch
 * becomes n; a token data set's lengths too, else every length is T) /
 * their labels into a backward cache. Errors: as the _gather functions,
 * SNN_ERR_DEVICE_MISMATCH (data set on another device), SNN_ERR_COUNT
 * (features or labels per sample differ from the model's), SNN_ERR_STATE
 * (the data set has no labels), SNN_ERR_LABEL, SNN_ERR_UNSUPPORTED (token
 * ids for a model of floats or the reverse; lengths for a model whose
 * steps change), SNN_ERR_TOKEN (an id outside the model's vocabulary). */
SNN_API snn_status snn_set_inputs_from_dataset(snn_forward_cache *cache,
                                               const snn_dataset *dataset,
                                               const int64_t *indices, size_t n);
SNN_API snn_status snn_set_labels_from_dataset(snn_backward_cache *cache,
                                               const snn_dataset *dataset,
                                               const int64_t *indices, size_t n);

/* A data set of token ids (see snn_dataset_create): sample_count samples of
 * `steps` ids (each in [0, 2^24]; a model's vocabulary is checked when
 * batches are gathered, snn_set_inputs_from_dataset), optionally their
 * lengths (NULL: every sample has `steps` steps; else each in [1, steps],
 * gathered with the tokens by snn_set_inputs_from_dataset) and labels
 * (NULL, or labels_per_sample per sample: 1 for a model with one output
 * vector, `steps` for a sequence output, where -1 ignores a step). NULL
 * labels make a data set without labels whatever labels_per_sample says
 * (it is then not read): snn_set_labels_from_dataset refuses such a set
 * with SNN_ERR_STATE.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_INVALID_ARGUMENT (zero sizes, a
 * length outside [1, steps], a negative label other than a step's -1,
 * labels_per_sample neither 1 nor steps), SNN_ERR_TOKEN (a negative id),
 * the device errors of snn_gpu_status, SNN_ERR_OUT_OF_MEMORY. */
SNN_API snn_status snn_dataset_create_tokens(int32_t device, const int32_t *tokens, size_t sample_count,
                                             size_t steps, const int32_t *lengths, const int32_t *labels,
                                             size_t labels_per_sample, snn_dataset **out);

/* ======================================================================== */
/* Native GPU interoperation                                                */
/* ======================================================================== */

/* Borrowed device pointer to a GPU backward cache's flat gradient (parameter
 * layout, *count = parameter count), for native CUDA code such as an NCCL
 * all-reduce across GPUs (libsnn_nccl). The memory lives on the cache's
 * device and is writable: what is written there is the gradient the next
 * snn_optimiser_step uses. Valid until the cache is destroyed.
 * Ordering: snn_backprop queues its work on the cache's own stream and may
 * return before the gradient is computed. The gradient is complete once
 * snn_backward_cache_synchronize(cache) returns; read or write it only after
 * that, and make sure your own writes have finished (e.g. synchronize your
 * stream) before the next snn_* call on the cache or snn_optimiser_step.
 * Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_DEVICE_MISMATCH for a CPU cache
 * (use snn_gradients there). */
SNN_API snn_status snn_gradients_device(snn_backward_cache *cache, float **data, size_t *count);

/* Waits until all work queued on the cache (backprop, uploads of targets or
 * labels) has finished, so that the memory of snn_gradients_device holds
 * the gradient. Returns at once for a CPU cache, whose work is done when
 * each call returns. Errors: SNN_ERR_NULL_ARGUMENT, SNN_ERR_CUDA (a failure
 * of the queued work, reported here). */
SNN_API snn_status snn_backward_cache_synchronize(snn_backward_cache *cache);

#ifdef __cplusplus
}
#endif

#endif /* SNN_H */

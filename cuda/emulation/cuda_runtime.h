// The CUDA runtime and kernel language as the plugin's kernels use them,
// for the host: g++ compiles cuda/*.cu against this header (and the
// cublas_v2.h and cudnn.h beside it) with SNN_CUDA_EMULATED defined, and the
// kernels run on the CPU (emulation.cpp). See docs/adding-an-op.md.
//
// - A launch (cuda/launch.h) runs at once, on the calling thread: one
//   block after another, each block's threads as fibers. A thread runs until
//   it reaches __syncthreads or ends; when every thread of the block waits
//   at the same __syncthreads, the next round starts. The order of the
//   blocks of a launch and of the threads in each round is a schedule (in
//   order, reversed, or shuffled from a seed), so a kernel whose result
//   depends on timing, within a block or between blocks, gives different
//   results under different schedules.
// - The grid-stride kernels' grids are a handful of blocks (check.h's
//   kGridStrideBlocks), so their loops go round more than once.
// - A __syncthreads that only some threads of a block reach (a thread ends
//   while others wait, or threads wait at different barriers) fails the
//   launch: cudaGetLastError returns cudaErrorLaunchFailure and
//   cudaGetErrorString says which threads and where.
// - __shared__ variables are static: the blocks of a launch run one after
//   the other, so each block has the memory to itself.
// - Streams and events are handles only: every copy, fill and launch has
//   finished when its call returns, which keeps stream order trivially.
// - Device memory is host memory, filled with NaN bytes (0xFF) when
//   allocated, so a kernel that reads what nothing wrote gives NaN. Each
//   allocation is exactly its size between two guards; a launch or cudaFree
//   that finds a guard overwritten aborts, naming the kernel (or cudaFree)
//   and the allocation's size (under AddressSanitizer the store itself is
//   reported).
// - Warp intrinsics (__shfl_*, votes) and atomics are not provided: a kernel
//   using them does not compile here.
#pragma once

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <cmath>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __shared__ static

#define CUDART_VERSION 13000

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1)
        : x(x_), y(y_), z(z_) {}
};

struct alignas(8) int2 {
    int x, y;
};
struct alignas(16) int4 {
    int x, y, z, w;
};

// The running thread's coordinates (set by the scheduler before it resumes
// a thread).
extern dim3 threadIdx, blockIdx, blockDim, gridDim;

// Waits until every thread of the block reached this barrier; file and line
// name the call site in messages.
void __syncthreads(const char *file = __builtin_FILE(), int line = __builtin_LINE());

enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorLaunchFailure = 719,
};

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};

constexpr unsigned int cudaStreamNonBlocking = 1;
constexpr unsigned int cudaEventDisableTiming = 2;
constexpr unsigned int cudaHostAllocDefault = 0;

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;

// The default streams, as handles (work on them is done when queued, too).
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

struct cudaDeviceProp {
    char name[256];
    int major, minor;
    size_t totalGlobalMem;
    int multiProcessorCount;
};

struct cudaFuncAttributes {
    int maxThreadsPerBlock;
};

const char *cudaGetErrorString(cudaError_t error);
const char *cudaGetErrorName(cudaError_t error);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaDriverGetVersion(int *version);
cudaError_t cudaRuntimeGetVersion(int *version);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);

cudaError_t cudaMalloc(void **p, size_t bytes);
template <typename T>
cudaError_t cudaMalloc(T **p, size_t bytes) {
    return cudaMalloc(reinterpret_cast<void **>(p), bytes);
}
cudaError_t cudaFree(void *p);
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags);
cudaError_t cudaMallocHost(void **p, size_t bytes);
cudaError_t cudaFreeHost(void *p);

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                              size_t width, size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void *dst, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t stream = nullptr);

cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags = 0);

cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);

template <typename F>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attributes, F *) {
    attributes->maxThreadsPerBlock = 1024;
    return cudaSuccess;
}

namespace snn {
namespace emu {

// The order in which the blocks of a launch run, and a block's threads in
// each round.
enum class Schedule { in_order, reversed, shuffled };

// Sets the schedule of the launches that follow (shuffled: from `seed` and
// the launch's number).
void set_schedule(Schedule schedule, uint64_t seed);

// How many launches of the kernel named `name` (template arguments
// stripped) ran since the process started.
uint64_t launches_of(const char *name);

// Runs `body` as every thread of every block of a launch of the kernel
// `name`; the launch's failure (a bad configuration, a barrier not reached
// by every thread) is left for cudaGetLastError.
void run_kernel(const char *name, dim3 grid, dim3 block, cudaStream_t stream,
                void (*body)(void *), void *context);

// What SNN_LAUNCH makes: launch(args...) runs the kernel with the
// arguments converted to its parameters, as a launch copies them.
template <typename F>
class Launch {
public:
    Launch(const char *name, F kernel, dim3 grid, dim3 block, cudaStream_t stream)
        : name_(name), kernel_(kernel), grid_(grid), block_(block), stream_(stream) {}

    template <typename... A>
    void operator()(const A &...args) const {
        auto call = [&]() { kernel_(args...); };
        run_kernel(name_, grid_, block_, stream_, &invoke<decltype(call)>, &call);
    }

private:
    template <typename C>
    static void invoke(void *call) {
        (*static_cast<C *>(call))();
    }

    const char *name_;
    F kernel_;
    dim3 grid_, block_;
    cudaStream_t stream_;
};

}  // namespace emu
}  // namespace snn

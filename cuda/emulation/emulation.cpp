// The emulated CUDA runtime (cuda_runtime.h): memory, copies, streams and
// events on the host, and kernel launches whose threads are ucontext fibers.
// Everything runs on the calling thread; the emulator is not thread-safe.
#include "cuda_runtime.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cublas_v2.h"
#include "cudnn.h"

#if defined(__SANITIZE_ADDRESS__)
#define SNN_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SNN_EMU_ASAN 1
#endif
#endif

#if defined(SNN_EMU_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

dim3 threadIdx, blockIdx, blockDim, gridDim;

struct CUstream_st {
    unsigned int flags;
};
struct CUevent_st {
    unsigned int flags;
};
struct cublasContext {
    int unused;
};
struct cudnnContext {
    int unused;
};

namespace snn {
namespace emu {
namespace {

// ---- errors -------------------------------------------------------------------

cudaError_t g_last_error = cudaSuccess;
// The description of the last failed launch, for cudaGetErrorString.
std::string g_failure = "unspecified launch failure";

cudaError_t fail(cudaError_t error, const std::string &what) {
    g_last_error = error;
    g_failure = what;
    return error;
}

// ---- fibers -------------------------------------------------------------------

// A sanitizer build's frames are larger; the kernels need little either way.
#if defined(SNN_EMU_ASAN)
constexpr size_t kStackBytes = 512 * 1024;
#else
constexpr size_t kStackBytes = 128 * 1024;
#endif

// CUDA's limit of threads per block.
constexpr unsigned int kMaxThreads = 1024;

enum class State { ready, waiting, done };

struct Fiber {
    ucontext_t context;
    char *stack = nullptr;  // kStackBytes above one guard page
    bool fresh = false;     // made (again) since it last ran a thread
    dim3 index;
    State state = State::done;
    const char *file = nullptr;  // the barrier it waits at
    int line = 0;
    void *fake_stack = nullptr;  // AddressSanitizer's, while switched out
};

// The launch being run and the fibers that run its threads. The fibers
// never move: a saved ucontext_t points into itself.
struct Scheduler {
    ucontext_t context;  // the launching thread's, while a fiber runs
    Fiber fibers[kMaxThreads];
    unsigned int made = 0;  // fibers[0, made) have a stack
    Fiber *current = nullptr;
    void (*body)(void *) = nullptr;
    void *argument = nullptr;
    Schedule schedule = Schedule::in_order;
    uint64_t seed = 0;
    std::mt19937_64 random;
    void *fake_stack = nullptr;
    const void *stack_bottom = nullptr;
    size_t stack_size = 0;
};

Scheduler g;
std::map<std::string, uint64_t> g_launches;

void start_switch(void **fake_stack, const void *bottom, size_t size) {
#if defined(SNN_EMU_ASAN)
    __sanitizer_start_switch_fiber(fake_stack, bottom, size);
#else
    (void)fake_stack, (void)bottom, (void)size;
#endif
}

void finish_switch(void *fake_stack, const void **bottom_old, size_t *size_old) {
#if defined(SNN_EMU_ASAN)
    __sanitizer_finish_switch_fiber(fake_stack, bottom_old, size_old);
#else
    (void)fake_stack, (void)bottom_old, (void)size_old;
#endif
}

// From a fiber back to the launching thread; returns when resumed.
void yield(Fiber &f) {
    start_switch(&f.fake_stack, g.stack_bottom, g.stack_size);
    swapcontext(&f.context, &g.context);
    finish_switch(f.fake_stack, &g.stack_bottom, &g.stack_size);
}

// Each fiber runs one thread of a block, then waits to be given the same
// thread of the next block.
void fiber_main() {
    finish_switch(nullptr, &g.stack_bottom, &g.stack_size);
    for (;;) {
        g.body(g.argument);
        Fiber &f = *g.current;
        f.state = State::done;
        yield(f);
    }
}

void make_fiber(Fiber &f) {
    if (f.stack == nullptr) {
        const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        void *p = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            std::fprintf(stderr, "snn emulated CUDA: cannot map a fiber stack\n");
            std::abort();
        }
        mprotect(p, page, PROT_NONE);  // an overflow faults instead of corrupting
        f.stack = static_cast<char *>(p) + page;
    }
#if defined(SNN_EMU_ASAN)
    // A fiber abandoned at a failed barrier left its frames poisoned.
    __asan_unpoison_memory_region(f.stack, kStackBytes);
#endif
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack;
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = nullptr;
    makecontext(&f.context, fiber_main, 0);
    // The stack is set up; without a size recorded, AddressSanitizer's
    // swapcontext does not clear the whole stack's shadow on every switch.
    f.context.uc_stack.ss_sp = nullptr;
    f.context.uc_stack.ss_size = 0;
    f.fake_stack = nullptr;
    f.fresh = true;
}

void resume(Fiber &f) {
    threadIdx = f.index;
    g.current = &f;
    f.fresh = false;
    start_switch(&g.fake_stack, f.stack, kStackBytes);
    swapcontext(&g.context, &f.context);
    finish_switch(g.fake_stack, nullptr, nullptr);
    g.current = nullptr;
}

std::string index_text(dim3 i) {
    char text[64];
    std::snprintf(text, sizeof text, "(%u,%u,%u)", i.x, i.y, i.z);
    return text;
}

std::string site_text(const Fiber &f) {
    return std::string(f.file) + ":" + std::to_string(f.line);
}

// The schedule's order of `count` threads of a round, or blocks of a launch.
template <typename Index>
void order_of(std::vector<Index> &order, Index count) {
    order.resize(count);
    for (Index i = 0; i < count; ++i)
        order[i] = g.schedule == Schedule::reversed ? count - 1 - i : i;
    if (g.schedule == Schedule::shuffled)
        for (Index i = count - 1; i > 0; --i)
            std::swap(order[i], order[g.random() % (i + 1)]);
}

// Runs the threads of the block at blockIdx to their end; returns an empty
// string, or what went wrong with a barrier.
std::string run_block(unsigned int count) {
    for (unsigned int t = 0; t < count; ++t) {
        Fiber &f = g.fibers[t];
        if (!f.fresh && f.state != State::done) make_fiber(f);
        f.index = dim3(t % blockDim.x, t / blockDim.x % blockDim.y, t / (blockDim.x * blockDim.y));
        f.state = State::ready;
    }
    std::vector<unsigned int> order;
    for (;;) {
        order_of(order, count);
        for (unsigned int t : order)
            if (g.fibers[t].state == State::ready) resume(g.fibers[t]);
        const Fiber *waiting = nullptr, *ended = nullptr;
        for (unsigned int t = 0; t < count; ++t) {
            const Fiber &f = g.fibers[t];
            if (f.state == State::done) {
                if (ended == nullptr) ended = &f;
                continue;
            }
            if (waiting == nullptr) {
                waiting = &f;
            } else if (f.line != waiting->line || std::strcmp(f.file, waiting->file) != 0) {
                return "threads wait at different __syncthreads: thread " +
                       index_text(waiting->index) + " at " + site_text(*waiting) + ", thread " +
                       index_text(f.index) + " at " + site_text(f);
            }
        }
        if (waiting == nullptr) return "";
        if (ended != nullptr)
            return "thread " + index_text(ended->index) + " ended while thread " +
                   index_text(waiting->index) + " waits at __syncthreads (" +
                   site_text(*waiting) + ")";
        for (unsigned int t = 0; t < count; ++t) g.fibers[t].state = State::ready;
    }
}

// ---- device memory ---------------------------------------------------------------

// Each allocation is exactly the bytes asked for, 256-byte aligned as
// CUDA's, between two guards of kGuardBytes set to a pattern of its own. A
// sanitizer build poisons the guards, so a store into one is reported where
// it happens; otherwise the guards of every live allocation are compared
// with their pattern after each launch and an allocation's own at cudaFree.
constexpr size_t kGuardBytes = 256;

struct Allocation {
    size_t bytes;
    uint32_t serial;  // its number among the allocations, for its pattern
};

// The device pointers given out.
std::map<char *, Allocation> g_allocations;
uint32_t g_serial = 0;

// Byte `offset` (from the start of the front guard) of the guards of the
// allocation numbered `serial`. Each allocation has a sequence of its own,
// so a copy from one guard into another shows; read as floats at 4-byte
// boundaries it is never NaN or infinite (its exponent is below 0x80), so
// arithmetic with it never gives back its own bits, as NaN + NaN does.
char guard_byte(uint32_t serial, size_t offset) {
    uint32_t h = (serial + 1) * 0x9E3779B1u ^ static_cast<uint32_t>(offset / 4) * 0x85EBCA6Bu;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    h &= 0xBFFFFFFFu;
    return static_cast<char>(h >> (8 * (offset % 4)));
}

void set_guards(char *p, const Allocation &a) {
    char *front = p - kGuardBytes, *back = p + a.bytes;
    for (size_t i = 0; i < kGuardBytes; ++i) {
        front[i] = guard_byte(a.serial, i);
        back[i] = guard_byte(a.serial, kGuardBytes + a.bytes + i);
    }
#if defined(SNN_EMU_ASAN)
    __asan_poison_memory_region(front, kGuardBytes);
    __asan_poison_memory_region(back, kGuardBytes);
#endif
}

// Aborts, naming `when`, the allocation's size and the overwritten byte
// nearest to it, if a guard of the allocation at p no longer holds its
// pattern.
void check_guards_of(const char *p, const Allocation &a, const std::string &when) {
#if defined(SNN_EMU_ASAN)
    (void)p, (void)a, (void)when;
#else
    long long at = 0;
    bool damaged = false;
    for (size_t i = 0; i < kGuardBytes && !damaged; ++i)
        if (p[a.bytes + i] != guard_byte(a.serial, kGuardBytes + a.bytes + i)) {
            at = (long long)(a.bytes + i);
            damaged = true;
        }
    for (size_t i = 1; i <= kGuardBytes && !damaged; ++i)
        if (p[-(long long)i] != guard_byte(a.serial, kGuardBytes - i)) {
            at = -(long long)i;
            damaged = true;
        }
    if (!damaged) return;
    std::fprintf(stderr,
                 "snn emulated CUDA, %s: memory outside a %zu-byte device allocation was "
                 "overwritten: its byte %lld (%s)\n",
                 when.c_str(), a.bytes, at, at < 0 ? "before its start" : "past its end");
    std::abort();
#endif
}

void check_guards(const std::string &when) {
    for (const auto &allocation : g_allocations)
        check_guards_of(allocation.first, allocation.second, when);
}

// "gather_kernel<W>" -> "gather_kernel"
std::string base_name(const char *name) {
    std::string s(name);
    const size_t angle = s.find('<');
    return angle == std::string::npos ? s : s.substr(0, angle);
}

}  // namespace

void set_schedule(Schedule schedule, uint64_t seed) {
    g.schedule = schedule;
    g.seed = seed;
}

uint64_t launches_of(const char *name) {
    auto it = g_launches.find(name);
    return it == g_launches.end() ? 0 : it->second;
}

void run_kernel(const char *name, dim3 grid, dim3 block, cudaStream_t, void (*body)(void *),
                void *argument) {
    const std::string kernel = base_name(name);
    const uint64_t number = ++g_launches[kernel];
    const unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (threads == 0 || threads > kMaxThreads || block.z > 64 || grid.x == 0 ||
        grid.x > 0x7fffffffu || grid.y == 0 || grid.y > 65535 || grid.z == 0 || grid.z > 65535) {
        fail(cudaErrorInvalidConfiguration,
             "invalid configuration argument: kernel " + kernel + " with grid " +
                 index_text(grid) + " and block " + index_text(block));
        return;
    }
    for (; g.made < threads; ++g.made) make_fiber(g.fibers[g.made]);
    g.body = body;
    g.argument = argument;
    g.random.seed(g.seed ^ (0x9E3779B97F4A7C15ull * number) ^ std::hash<std::string>()(kernel));
    gridDim = grid;
    blockDim = block;
    std::vector<uint64_t> blocks;
    order_of(blocks, uint64_t(grid.x) * grid.y * grid.z);
    for (uint64_t b : blocks) {
        blockIdx = dim3(unsigned(b % grid.x), unsigned(b / grid.x % grid.y),
                        unsigned(b / grid.x / grid.y));
        const std::string error = run_block(static_cast<unsigned int>(threads));
        if (!error.empty()) {
            fail(cudaErrorLaunchFailure, "unspecified launch failure: kernel " + kernel +
                                             ", block " + index_text(blockIdx) + ": " + error);
            return;
        }
    }
    check_guards("after kernel " + kernel);
}

}  // namespace emu
}  // namespace snn

using snn::emu::g;

void __syncthreads(const char *file, int line) {
    snn::emu::Fiber *f = g.current;
    if (f == nullptr) {
        std::fprintf(stderr, "snn emulated CUDA: __syncthreads outside a kernel (%s:%d)\n", file,
                     line);
        std::abort();
    }
    f->state = snn::emu::State::waiting;
    f->file = file;
    f->line = line;
    snn::emu::yield(*f);
}

// ---- runtime API ------------------------------------------------------------------

const char *cudaGetErrorString(cudaError_t error) {
    switch (error) {
        case cudaSuccess: return "no error";
        case cudaErrorInvalidValue: return "invalid argument";
        case cudaErrorMemoryAllocation: return "out of memory";
        case cudaErrorInvalidConfiguration:
        case cudaErrorLaunchFailure: return snn::emu::g_failure.c_str();
        default: return "unknown error";
    }
}

const char *cudaGetErrorName(cudaError_t error) {
    switch (error) {
        case cudaSuccess: return "cudaSuccess";
        case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
        case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
        case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
        case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
        default: return "cudaErrorUnknown";
    }
}

cudaError_t cudaGetLastError() {
    const cudaError_t error = snn::emu::g_last_error;
    snn::emu::g_last_error = cudaSuccess;
    return error;
}

cudaError_t cudaPeekAtLastError() { return snn::emu::g_last_error; }

cudaError_t cudaGetDeviceCount(int *count) {
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
    return device == 0 ? cudaSuccess : snn::emu::fail(cudaErrorInvalidDevice, "invalid device");
}

cudaError_t cudaGetDevice(int *device) {
    *device = 0;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device) {
    if (device != 0) return cudaErrorInvalidDevice;
    std::memset(prop, 0, sizeof *prop);
    std::snprintf(prop->name, sizeof prop->name, "emulated on the CPU");
    prop->major = 9;
    prop->minor = 0;
    prop->totalGlobalMem = size_t(16) << 30;
    prop->multiProcessorCount = 1;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *version) {
    *version = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version) {
    *version = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    *free_bytes = *total_bytes = size_t(16) << 30;
    return cudaSuccess;
}

// Device memory starts as NaN bytes, so reading unwritten memory shows.
cudaError_t cudaMalloc(void **p, size_t bytes) {
    using snn::emu::kGuardBytes;
    if (bytes == 0) {
        *p = nullptr;
        return cudaSuccess;
    }
    void *front = nullptr;
    if (posix_memalign(&front, 256, kGuardBytes + bytes + kGuardBytes) != 0)
        return cudaErrorMemoryAllocation;
    char *q = static_cast<char *>(front) + kGuardBytes;
    std::memset(q, 0xFF, bytes);
    const snn::emu::Allocation a{bytes, snn::emu::g_serial++};
    snn::emu::set_guards(q, a);
    snn::emu::g_allocations[q] = a;
    *p = q;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
    using snn::emu::kGuardBytes;
    if (p == nullptr) return cudaSuccess;
    auto it = snn::emu::g_allocations.find(static_cast<char *>(p));
    if (it == snn::emu::g_allocations.end())
        return snn::emu::fail(cudaErrorInvalidValue, "invalid argument");
    const size_t bytes = it->second.bytes;
    snn::emu::check_guards_of(it->first, it->second, "at cudaFree");
    snn::emu::g_allocations.erase(it);
    char *front = static_cast<char *>(p) - kGuardBytes;
#if defined(SNN_EMU_ASAN)
    __asan_unpoison_memory_region(front, kGuardBytes + bytes + kGuardBytes);
#endif
    std::free(front);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int) {
    *p = std::malloc(bytes == 0 ? 1 : bytes);
    return *p == nullptr ? cudaErrorMemoryAllocation : cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t bytes) { return cudaHostAlloc(p, bytes, 0); }

cudaError_t cudaFreeHost(void *p) {
    std::free(p);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind) {
    if (bytes > 0) std::memmove(dst, src, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t) {
    return cudaMemcpy(dst, src, bytes, kind);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                              size_t width, size_t height, cudaMemcpyKind, cudaStream_t) {
    if (width > dst_pitch || width > src_pitch) return cudaErrorInvalidValue;
    for (size_t r = 0; r < height; ++r)
        std::memmove(static_cast<char *>(dst) + r * dst_pitch,
                     static_cast<const char *>(src) + r * src_pitch, width);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *dst, int value, size_t bytes) {
    std::memset(dst, value, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t) {
    return cudaMemset(dst, value, bytes);
}

cudaError_t cudaStreamCreate(cudaStream_t *stream) {
    return cudaStreamCreateWithFlags(stream, 0);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags) {
    *stream = new CUstream_st{flags};
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    delete stream;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }

cudaError_t cudaEventCreate(cudaEvent_t *event) { return cudaEventCreateWithFlags(event, 0); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
    *event = new CUevent_st{flags};
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    delete event;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }

// ---- cuBLAS and cuDNN handles -------------------------------------------------------

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
    *handle = new cublasContext{0};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetWorkspace(cublasHandle_t, void *, size_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }

const char *cublasGetStatusString(cublasStatus_t status) {
    return status == CUBLAS_STATUS_SUCCESS ? "success" : "failure";
}

const char *cublasGetStatusName(cublasStatus_t status) {
    return status == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_FAILURE";
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) {
    *handle = new cudnnContext{0};
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
    delete handle;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t, cudaStream_t) { return CUDNN_STATUS_SUCCESS; }
size_t cudnnGetVersion() { return 90000; }

const char *cudnnGetErrorString(cudnnStatus_t status) {
    return status == CUDNN_STATUS_SUCCESS ? "CUDNN_STATUS_SUCCESS" : "CUDNN_STATUS_FAILURE";
}

void cudnnGetLastErrorString(char *message, size_t max_size) {
    if (max_size > 0) message[0] = '\0';
}

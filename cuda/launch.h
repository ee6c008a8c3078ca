// SNN_LAUNCH(kernel, grid, block, stream, args...) queues `kernel` on
// `stream` with `grid` blocks of `block` threads, no dynamic shared memory,
// and the given arguments. Under nvcc it is
// kernel<<<grid, block, 0, stream>>>(args...); built for the host with
// SNN_CUDA_EMULATED (cuda/emulation/) it runs the kernel's threads as fibers
// on the CPU, so suite gpu-emulated runs the backend's own launch code
// without a GPU.
#pragma once

#if defined(SNN_CUDA_EMULATED)
#define SNN_LAUNCH(kernel, grid, block, stream, ...) \
    ::snn::emu::Launch<decltype(&kernel)>(#kernel, &kernel, grid, block, stream)(__VA_ARGS__)
#else
#define SNN_LAUNCH(kernel, grid, block, stream, ...) \
    kernel<<<grid, block, 0, stream>>>(__VA_ARGS__)
#endif

// SNN_MULTIVERSION compiles a function for AVX2 (x86-64-v3) and for the
// x86-64 baseline (SNN_MULTIVERSION_512 also for AVX-512, x86-64-v4); the
// dynamic loader picks the one the processor runs.
// The instruction-set cap (SNN_CPU_ISA, cpu/kernel_choice.h) does not reach
// these functions: the loader's resolver (libgcc's, which reads cpuid) picks
// a clone when the library loads, before any setting of snn is read, and
// keeps it for the process. Under the cap portable or avx2 they run their
// AVX2 or AVX-512 clone where the processor has it; steering them would need
// dispatch of snn's own in place of target_clones.
// Sanitizer builds take the baseline only: the loader runs the selector
// before a sanitizer runtime is ready. So do targets other than ELF
// (Windows): their loaders have no ifunc to select a clone with.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SNN_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define SNN_SANITIZED 1
#endif
#endif

#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__)) && !defined(SNN_SANITIZED)
#define SNN_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
// The same with an AVX-512 (x86-64-v4) version too, for loops whose
// elementwise math is most of their time (the recurrent gate passes).
#define SNN_MULTIVERSION_512 __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SNN_MULTIVERSION
#define SNN_MULTIVERSION_512
#endif

// SNN_MULTIVERSION compiles a function for AVX2 (x86-64-v3) and for the
// x86-64 baseline (SNN_MULTIVERSION_512 also for AVX-512, x86-64-v4); the
// dynamic loader picks the one the processor runs.
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

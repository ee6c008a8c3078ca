// SNN_MULTIVERSION compiles a function for AVX2 (x86-64-v3) and for the
// x86-64 baseline; the dynamic loader picks the one the processor runs.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define SNN_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SNN_MULTIVERSION
#endif

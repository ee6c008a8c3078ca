// Sanitizer settings for the fuzz targets. A spec may ask for billions of
// parameters: above FUZZ_MAX_ALLOCATION_MB (256 MiB unless the target sets
// less) an allocation fails (snn returns SNN_ERR_OUT_OF_MEMORY) instead of
// ending the run as an out-of-memory crash.
#pragma once

#ifndef FUZZ_MAX_ALLOCATION_MB
#define FUZZ_MAX_ALLOCATION_MB "256"
#endif

extern "C" const char *__asan_default_options() {
    return "allocator_may_return_null=1:max_allocation_size_mb=" FUZZ_MAX_ALLOCATION_MB;
}

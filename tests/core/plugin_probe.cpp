// Reports where snn looked for the CUDA plugin: prints snn_gpu_status(0)
// and snn_last_error(). With "--dlopen LIB" it loads libsnn from LIB (a path
// that may be relative) instead of being linked with it; with "--chdir DIR"
// it changes directory first (after loading libsnn), so a plugin directory
// kept as a relative path would point elsewhere.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "snn.h"

int main(int argc, char **argv) {
    snn_status (*gpu_status)(int32_t) = nullptr;
    const char *(*last_error)(void) = nullptr;
#ifdef PROBE_LINKED
    gpu_status = snn_gpu_status;
    last_error = snn_last_error;
#endif
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--dlopen") == 0) {
            void *lib = dlopen(argv[i + 1], RTLD_NOW | RTLD_LOCAL);
            if (lib == nullptr) {
                std::printf("cannot load %s: %s\n", argv[i + 1], dlerror());
                return 1;
            }
            gpu_status = reinterpret_cast<snn_status (*)(int32_t)>(dlsym(lib, "snn_gpu_status"));
            last_error = reinterpret_cast<const char *(*)(void)>(dlsym(lib, "snn_last_error"));
        } else if (std::strcmp(argv[i], "--chdir") == 0 && chdir(argv[i + 1]) != 0) {
            std::printf("cannot change to %s\n", argv[i + 1]);
            return 1;
        }
    }
    if (gpu_status == nullptr || last_error == nullptr) {
        std::printf("no libsnn: link it or pass --dlopen LIB\n");
        return 1;
    }
    const snn_status status = gpu_status(0);
    std::printf("status %d: %s\n", int(status), last_error());
    return 0;
}

// Shared libraries on POSIX systems (see dynamic_library.h).
#include "platform/dynamic_library.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace snn {
namespace platform {
namespace {

// The module's path, read by find_own_module_path when the module is loaded.
char g_module_path[PATH_MAX];

// Runs when the module is loaded, before the program can change directory:
// dladdr gives a shared library's path as it was opened, which may be
// relative (a relative LD_LIBRARY_PATH entry or dlopen path), and, for code
// linked into the executable, argv[0], which may be a bare name found
// through PATH. The executable's own path comes from /proc/self/exe instead.
__attribute__((constructor)) void find_own_module_path() {
    Dl_info info;
    link_map *map = nullptr;
    if (dladdr1(reinterpret_cast<void *>(&find_own_module_path), &info, reinterpret_cast<void **>(&map),
                RTLD_DL_LINKMAP) == 0)
        return;
    char path[PATH_MAX] = "";
    if (map == nullptr || map->l_name == nullptr || map->l_name[0] == '\0') {  // the executable
        const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
        if (n <= 0) return;
        path[n] = '\0';
    } else if (info.dli_fname[0] == '/') {
        if (std::strlen(info.dli_fname) >= sizeof(path)) return;
        std::strcpy(path, info.dli_fname);
    } else {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof(cwd)) == nullptr) return;
        if (std::snprintf(path, sizeof(path), "%s/%s", cwd, info.dli_fname) >= int(sizeof(path))) return;
    }
    std::memcpy(g_module_path, path, sizeof(path));
}

}  // namespace

std::string shared_library_file_name(const std::string &stem) { return "lib" + stem + ".so"; }

void *load_library(const std::string &path, std::string *reason) {
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char *why = dlerror();
        *reason = why ? why : "unknown reason";
    }
    return handle;
}

void *library_symbol(void *library, const char *name) { return dlsym(library, name); }

const std::string &own_module_path() {
    static const std::string path = g_module_path;
    return path;
}

const std::string &own_module_directory() {
    static const std::string directory = [] {
        const std::string &path = own_module_path();
        return path.substr(0, path.find_last_of('/') + 1);  // "" when there is no path
    }();
    return directory;
}

}  // namespace platform
}  // namespace snn

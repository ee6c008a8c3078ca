// Shared libraries on Windows (see dynamic_library.h).
#include "platform/dynamic_library.h"

#include <windows.h>

#include "platform/files.h"
#include "platform/unicode.h"

namespace snn {
namespace platform {
namespace {

HMODULE g_pinned_module = nullptr;

std::string utf8_of(const std::wstring &text) { return utf16_to_utf8(std::u16string(text.begin(), text.end())); }

// The path of the module that holds this function: GetModuleHandleExW finds
// it by address (snn.dll, or the program linking snn statically) without
// keeping it loaded; GetModuleFileNameW gives its full path.
std::string find_own_module_path() {
    HMODULE module = nullptr;
    if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            reinterpret_cast<LPCWSTR>(&find_own_module_path), &module))
        return "";
    std::wstring path(MAX_PATH, L'\0');
    for (;;) {
        const DWORD n = GetModuleFileNameW(module, &path[0], DWORD(path.size()));
        if (n == 0) return "";
        if (n < path.size()) {
            path.resize(n);
            return utf8_of(path);
        }
        if (path.size() >= 32768) return "";  // longer than any Windows path
        path.resize(path.size() * 2);
    }
}

// snn.dll is never unloaded, as libsnn.so is linked nodelete on ELF systems:
// its pool threads live for the process, and the CUDA plugin and
// thread-local storage keep pointers into it (cpu/thread_pool.cpp).
// Pinned when loaded (GetModuleHandleExW is kernel32's, safe while the
// loader runs the DLL's initialisers); nothing to pin in a program.
const bool g_pinned = GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_PIN,
                                         reinterpret_cast<LPCWSTR>(&find_own_module_path), &g_pinned_module) != 0;

}  // namespace

std::string shared_library_file_name(const std::string &stem) { return stem + ".dll"; }

void *load_library(const std::string &path, std::string *reason) {
    std::u16string utf16;
    if (!utf8_to_utf16(path, &utf16)) {
        *reason = os_error_text(kInvalidUtf8Path);
        return nullptr;
    }
    const std::wstring wpath(utf16.begin(), utf16.end());
    // An absolute path: the plugin's own dependencies are looked for in its
    // directory first, then in the system's usual places.
    const bool absolute = wpath.size() > 2 && (wpath[1] == L':' || (wpath[0] == L'\\' && wpath[1] == L'\\'));
    const DWORD flags = absolute ? LOAD_WITH_ALTERED_SEARCH_PATH : 0;
    HMODULE module = LoadLibraryExW(wpath.c_str(), nullptr, flags);
    if (module == nullptr) *reason = os_error_text(int(GetLastError()));
    return reinterpret_cast<void *>(module);
}

void *library_symbol(void *library, const char *name) {
    return reinterpret_cast<void *>(GetProcAddress(static_cast<HMODULE>(library), name));
}

const std::string &own_module_path() {
    static const std::string path = find_own_module_path();
    return path;
}

const std::string &own_module_directory() {
    static const std::string directory = [] {
        const std::string &path = own_module_path();
        return path.substr(0, path.find_last_of("/\\") + 1);
    }();
    return directory;
}

}  // namespace platform
}  // namespace snn

// Loading shared libraries (dlopen, LoadLibraryExW) and finding the
// directory of snn's own module, where the CUDA plugin lies.
#pragma once

#include <string>

namespace snn {
namespace platform {

// The file name of shared library `stem` on this platform:
// "lib<stem>.so" on POSIX, "<stem>.dll" on Windows.
std::string shared_library_file_name(const std::string &stem);

// Loads the shared library at path (UTF-8), resolving all its symbols now,
// and never unloads it. Returns its handle, or null with *reason set to
// the loader's message.
void *load_library(const std::string &path, std::string *reason);

// The address of `name` in a library load_library returned, or null.
void *library_symbol(void *library, const char *name);

// The absolute directory of the module this code is linked into, ending in
// a separator: the shared library snn (libsnn.so, snn.dll), or the program
// when snn is linked into it statically. Read when the module is loaded on
// POSIX, before the program can change directory. "" when it cannot be
// known.
const std::string &own_module_directory();

// The path of the module this code is linked into ("" when unknown).
const std::string &own_module_path();

}  // namespace platform
}  // namespace snn

// Splitting paths at their last separator ('/', and '\\' on Windows).
#include "platform/files.h"

namespace snn {
namespace platform {
namespace {

#ifdef _WIN32
constexpr const char *kSeparators = "/\\";
#else
constexpr const char *kSeparators = "/";
#endif

}  // namespace

std::string directory_of(const std::string &path) {
    const size_t slash = path.find_last_of(kSeparators);
#ifdef _WIN32
    const bool drive = path.size() >= 2 && path[1] == ':';
    if (slash == std::string::npos) return drive ? path.substr(0, 2) : ".";
    if (drive && slash == 2) return path.substr(0, 3);  // "C:\\"
#else
    if (slash == std::string::npos) return ".";
#endif
    return slash == 0 ? path.substr(0, 1) : path.substr(0, slash);
}

std::string file_name_of(const std::string &path) {
    const size_t slash = path.find_last_of(kSeparators);
#ifdef _WIN32
    if (slash == std::string::npos && path.size() >= 2 && path[1] == ':') return path.substr(2);
#endif
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace platform
}  // namespace snn

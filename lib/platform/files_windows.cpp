// Files on Windows (see files.h): UTF-16 paths through the wide-character
// calls; handles are never inherited by child processes.
#include "platform/files.h"

#include <windows.h>
#include <bcrypt.h>

#include "platform/unicode.h"

namespace snn {
namespace platform {

struct FileAccess {
    static HANDLE handle(const File &f) { return reinterpret_cast<HANDLE>(f.handle_); }
    static void set(File &f, HANDLE h) { f.handle_ = reinterpret_cast<intptr_t>(h); }
};

namespace {

// path as the wide-character calls take it; false when it is not UTF-8.
bool wide_path(const std::string &path, std::wstring *out) {
    std::u16string utf16;
    if (!utf8_to_utf16(path, &utf16)) return false;
    out->assign(utf16.begin(), utf16.end());
    return true;
}

std::string utf8_of(const wchar_t *text) {
    std::u16string utf16;
    for (; *text; ++text) utf16.push_back(char16_t(*text));
    return utf16_to_utf8(utf16);
}

// Seconds as FILETIME counts them (100-nanosecond ticks).
constexpr int64_t kTicksPerSecond = 10000000;

int64_t ticks_of(FILETIME t) { return int64_t(uint64_t(t.dwHighDateTime) << 32 | t.dwLowDateTime); }

// The most one ReadFile or WriteFile call moves.
constexpr size_t kChunk = 1u << 30;

}  // namespace

std::string os_error_text(int code) {
    if (code == kInvalidUtf8Path) return "the path is not valid UTF-8";
    wchar_t *text = nullptr;
    const DWORD n = FormatMessageW(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM |
                                       FORMAT_MESSAGE_IGNORE_INSERTS,
                                   nullptr, DWORD(code), 0, reinterpret_cast<wchar_t *>(&text), 0, nullptr);
    if (n == 0 || text == nullptr) return "Windows error " + std::to_string(code);
    std::string message = utf8_of(text);
    LocalFree(text);
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r' || message.back() == '.' ||
                                message.back() == ' '))
        message.pop_back();
    return message;
}

File::~File() { close(); }

int File::close() {
    if (handle_ == kClosed) return 0;
    const BOOL ok = CloseHandle(reinterpret_cast<HANDLE>(handle_));
    handle_ = kClosed;
    return ok ? 0 : int(GetLastError());
}

OpenedForReading open_for_reading(const std::string &path, File &file) {
    OpenedForReading r;
    std::wstring wpath;
    if (!wide_path(path, &wpath)) {
        r.error = kInvalidUtf8Path;
        r.step = "open";
        return r;
    }
    const DWORD attributes = GetFileAttributesW(wpath.c_str());
    if (attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_DIRECTORY)) {
        r.kind = FileKind::directory;
        return r;
    }
    const HANDLE h = CreateFileW(wpath.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                                 nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (h == INVALID_HANDLE_VALUE) {
        r.error = int(GetLastError());
        r.step = "open";
        return r;
    }
    FileAccess::set(file, h);
    const DWORD type = GetFileType(h);
    if (type != FILE_TYPE_DISK) {
        r.kind = type == FILE_TYPE_CHAR ? FileKind::character_device
                 : type == FILE_TYPE_PIPE ? FileKind::fifo
                                          : FileKind::other;
        file.close();
        return r;
    }
    BY_HANDLE_FILE_INFORMATION info;
    if (!GetFileInformationByHandle(h, &info)) {
        r.error = int(GetLastError());
        r.step = "stat";
        file.close();
        return r;
    }
    if (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) {
        r.kind = FileKind::directory;
        file.close();
        return r;
    }
    r.size = uint64_t(info.nFileSizeHigh) << 32 | info.nFileSizeLow;
    return r;
}

int read_at(const File &file, uint64_t offset, void *dst, size_t bytes, size_t *got) {
    OVERLAPPED at = {};
    at.Offset = DWORD(offset);
    at.OffsetHigh = DWORD(offset >> 32);
    DWORD read = 0;
    if (!ReadFile(FileAccess::handle(file), dst, DWORD(bytes < kChunk ? bytes : kChunk), &read, &at)) {
        const DWORD err = GetLastError();
        if (err != ERROR_HANDLE_EOF) return int(err);
        read = 0;
    }
    *got = read;
    return 0;
}

int create_new_file(const std::string &path, File &file) {
    std::wstring wpath;
    if (!wide_path(path, &wpath)) return kInvalidUtf8Path;
    const HANDLE h =
        CreateFileW(wpath.c_str(), GENERIC_WRITE, 0, nullptr, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (h == INVALID_HANDLE_VALUE) return int(GetLastError());
    FileAccess::set(file, h);
    return 0;
}

bool already_exists(int code) { return code == ERROR_FILE_EXISTS || code == ERROR_ALREADY_EXISTS; }

int write_all(File &file, const void *data, size_t bytes) {
    const char *p = static_cast<const char *>(data);
    while (bytes > 0) {
        DWORD written = 0;
        if (!WriteFile(FileAccess::handle(file), p, DWORD(bytes < kChunk ? bytes : kChunk), &written, nullptr))
            return int(GetLastError());
        p += written;
        bytes -= written;
    }
    return 0;
}

int sync(File &file) { return FlushFileBuffers(FileAccess::handle(file)) ? 0 : int(GetLastError()); }

int replace_file(const std::string &from, const std::string &to) {
    std::wstring wfrom, wto;
    if (!wide_path(from, &wfrom) || !wide_path(to, &wto)) return kInvalidUtf8Path;
    return MoveFileExW(wfrom.c_str(), wto.c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)
               ? 0
               : int(GetLastError());
}

int sync_directory_of(const std::string &) { return 0; }

int remove_file(const std::string &path) {
    std::wstring wpath;
    if (!wide_path(path, &wpath)) return kInvalidUtf8Path;
    return DeleteFileW(wpath.c_str()) ? 0 : int(GetLastError());
}

bool exists(const std::string &path) {
    std::wstring wpath;
    return wide_path(path, &wpath) && GetFileAttributesW(wpath.c_str()) != INVALID_FILE_ATTRIBUTES;
}

void remove_files_older_than(const std::string &directory, const std::function<bool(const char *name)> &matches,
                             int64_t seconds) {
    std::wstring wdir;
    if (!wide_path(directory, &wdir)) return;
    if (wdir.back() != L'/' && wdir.back() != L'\\' && wdir.back() != L':') wdir += L'\\';
    WIN32_FIND_DATAW found;
    const HANDLE search = FindFirstFileW((wdir + L"*").c_str(), &found);
    if (search == INVALID_HANDLE_VALUE) return;
    FILETIME now_time;
    GetSystemTimeAsFileTime(&now_time);
    const int64_t now = ticks_of(now_time);
    do {
        if (found.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT | FILE_ATTRIBUTE_DEVICE))
            continue;
        if (!matches(utf8_of(found.cFileName).c_str())) continue;
        if (now - ticks_of(found.ftLastWriteTime) > seconds * kTicksPerSecond)
            DeleteFileW((wdir + found.cFileName).c_str());
    } while (FindNextFileW(search, &found));
    FindClose(search);
}

int random_bytes(void *dst, size_t bytes, const char **step, const char **source) {
    if (BCryptGenRandom(nullptr, static_cast<PUCHAR>(dst), ULONG(bytes), BCRYPT_USE_SYSTEM_PREFERRED_RNG) >= 0)
        return 0;
    *step = "read random bytes from";
    *source = "BCryptGenRandom";
    return ERROR_GEN_FAILURE;
}

}  // namespace platform
}  // namespace snn

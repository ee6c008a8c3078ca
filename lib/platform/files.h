// Files: what model files and checkpoints need of the operating system, and
// nothing of their format. Every function reports a failure as an OS error
// code (errno on POSIX, GetLastError() on Windows; 0 is success), which
// os_error_text words; the floors above turn it into snn's errors. Paths are
// UTF-8 (converted to UTF-16 on Windows, where a path that is not valid
// UTF-8 fails with kInvalidUtf8Path).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <functional>
#include <string>

namespace snn {
namespace platform {

// A path that is not valid UTF-8 (Windows only: POSIX paths are bytes). Bit
// 29 marks application codes, so no Win32 error code is this value.
constexpr int kInvalidUtf8Path = 0x20000001;

// The text of an OS error code (strerror, FormatMessage), in UTF-8.
std::string os_error_text(int code);

// An open file, closed when destroyed.
class File {
public:
    File() = default;
    ~File();
    File(const File &) = delete;
    File &operator=(const File &) = delete;

    bool is_open() const { return handle_ != kClosed; }
    // Closes the file; an error code if the close reported one (the file is
    // closed all the same).
    int close();

private:
    static constexpr intptr_t kClosed = -1;
    intptr_t handle_ = kClosed;  // a file descriptor, or a Windows HANDLE

    friend struct FileAccess;
};

// What a path that is not a regular file is.
enum class FileKind { regular, directory, fifo, character_device, block_device, socket, other };

// The result of open_for_reading.
struct OpenedForReading {
    int error = 0;                      // 0, or the OS error code of `step`
    const char *step = "";              // "open" or "stat": what failed
    FileKind kind = FileKind::regular;  // not regular: refused, with error 0
    uint64_t size = 0;                  // the file's size in bytes
};

// Opens path for reading if it is a regular file. Anything else is refused
// before it is read: its kind is asked first, so a FIFO or a device is never
// opened, and opening never blocks (a FIFO put in its place meanwhile) nor
// makes a terminal the process's own; the open file is asked again.
OpenedForReading open_for_reading(const std::string &path, File &file);

// Reads up to `bytes` bytes at `offset` into dst (*got: how many; 0 at the
// end of the file). Interrupted reads are retried.
int read_at(const File &file, uint64_t offset, void *dst, size_t bytes, size_t *got);

// Creates path, which must not exist (already_exists(code) when it does),
// for writing, not inherited by child processes.
int create_new_file(const std::string &path, File &file);
bool already_exists(int code);

// Writes all of data at the file's end. Interrupted writes are retried.
int write_all(File &file, const void *data, size_t bytes);

// Makes the file's contents durable (fsync, FlushFileBuffers).
int sync(File &file);

// Renames from over to, replacing to atomically if it exists. On Windows
// the rename itself is made durable before this returns.
int replace_file(const std::string &from, const std::string &to);

// Makes a rename into path's directory durable: the directory is synced on
// POSIX (one that cannot be opened for reading, or cannot be synced, is
// skipped); nothing to do on Windows (replace_file wrote through).
int sync_directory_of(const std::string &path);

// Removes the file path.
int remove_file(const std::string &path);

// Whether something exists at path.
bool exists(const std::string &path);

// Removes the regular files of `directory` whose names `matches` accepts and
// that were last modified more than `seconds` seconds ago. Best effort: what
// cannot be listed or removed stays.
void remove_files_older_than(const std::string &directory, const std::function<bool(const char *name)> &matches,
                             int64_t seconds);

// Fills dst with `bytes` bytes from the system's entropy source, fresh on
// every call (forked processes never repeat each other). On failure returns
// the error code and sets *step ("open", "read") and *source (what was
// read: "/dev/urandom", "BCryptGenRandom").
int random_bytes(void *dst, size_t bytes, const char **step, const char **source);

// The directory part of path: "." when it has none, the root when the file
// is in it. Separators are '/' (and '\\' on Windows).
std::string directory_of(const std::string &path);

// The part of path after its last separator.
std::string file_name_of(const std::string &path);

}  // namespace platform
}  // namespace snn

#pragma once
// Files that are either completely written or not written at all, and clear I/O errors.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace glass {

/// A file or directory that cannot be read or written. The message names the path and the
/// operating system's reason, e.g. "cannot write file 'out/model.safetensors': Permission denied".
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Writes `bytes` to `path` atomically: a temporary file in the same directory is written,
/// flushed and fsync'ed, then renamed over `path` (rename is atomic on POSIX), and the directory
/// is fsync'ed. Readers see the old file or the new one, never half of it. On any failure the
/// temporary file is removed and FileError is thrown; `path` is left untouched.
///
/// A `path` that is not a regular file is never replaced: a symbolic link is followed (the file
/// it points to is replaced atomically, the link stays; a link to nothing is refused); a
/// character device or a FIFO (e.g. /dev/null, /dev/stdout, a pipe) is written directly, with
/// every write error reported (e.g. "No space left on device" for /dev/full); a directory, a
/// block device or a socket is refused with FileError.
void write_file_atomic(const std::string& path, const std::string& bytes);

/// Test hook for the file operations of a checkpoint save (write_file_atomic and the
/// run-directory switch of checkpoint/run_dir.hpp call it before each operation: creating a file,
/// writing it, renaming it, making a directory or link, switching, removing). Counts the
/// operations of this process, and
///   GLASS_FAULT_TRACE=1            prints "file op N: WHAT PATH" to stderr for each;
///   GLASS_FAULT_AFTER_FILE_OPS=k   kills the process with SIGKILL before operation k + 1
///                                  (so exactly k operations happened, as after a `kill -9`);
///   GLASS_FAULT_FAIL_FILE_OP=k     makes operation k fail with ENOSPC (a full disk).
/// Returns 0, or the errno the caller must treat as the operation's failure. Without these
/// environment variables it only counts.
int file_op_fault(const char* what, const std::string& path);

/// Creates `path` and its parents if needed. Throws FileError if it exists and is not a
/// directory, or cannot be created ("cannot create directory 'X': Permission denied").
void ensure_directory(const std::string& path);

/// ensure_directory, then checks that a file can be created in it (by writing and removing a
/// small temporary file), so that a long run fails before it starts rather than at its first
/// checkpoint. Throws FileError ("cannot write to directory 'X': Permission denied").
void ensure_writable_directory(const std::string& path);

/// Removes the temporary files that write_file_atomic left in `dir` when its process was killed
/// mid-write: "<file>.tmp.<pid>.<n>" for one of the names in `files` (the files the caller
/// writes there), whose process <pid> no longer runs on this machine. Temporary files of live
/// processes and every other file are left alone. Returns how many were removed. Best effort:
/// a file that cannot be removed is skipped.
std::size_t remove_stale_temp_files(const std::string& dir, const std::vector<std::string>& files);

/// The whole content of a file. Throws FileError for a missing, unreadable or directory path.
std::string read_file(const std::string& path);

/// The whole content of the checkpoint file at `path`, refused before it is read when it is
/// larger than the limit for its name (max_file_bytes, data/file_limits.hpp). Throws FileError
/// ("... has N bytes, more than the M glass reads for a config.json: is the file corrupt?")
/// for a file past the limit, and as read_file otherwise.
std::string read_checkpoint_file(const std::string& path);

}  // namespace glass

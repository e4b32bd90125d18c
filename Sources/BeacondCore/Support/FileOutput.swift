import Glibc
import SystemPackage

/// A file that could not be written: which, and why.
struct FileWriteError: Error, CustomStringConvertible {
    let path: String
    let operation: String
    let code: Int32

    var description: String {
        "cannot \(operation) \(path): \(errnoText(code))"
    }
}

package enum FileOutput {
    /// Writes `bytes` to `path` atomically: a temporary file beside it, fsync, rename.
    /// A crash leaves either the old file or the new one, never a torn one.
    package static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws {
        let temporary = path + ".tmp.\(getpid())"
        // A new file, always: whatever was left at the temporary path (a FIFO would block open(2)) goes.
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw FileWriteError(path: temporary, operation: "create", code: errno) }
        let failure: Int32?
        do {
            try FileDescriptor(rawValue: fd).writeAll(bytes)
            failure = fsync(fd) == 0 ? nil : errno
        } catch {
            failure = (error as? Errno)?.rawValue ?? EIO
        }
        close(fd)
        if let failure {
            unlink(temporary)
            throw FileWriteError(path: path, operation: "write", code: failure)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw FileWriteError(path: path, operation: "rename into", code: code)
        }
    }
}

import Foundation
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
    /// Creates `directory` and its parents (mode 0755) unless it exists.
    package static func makeDirectory(_ directory: String) throws {
        var info = stat()
        if stat(directory, &info) == 0 { return }
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o755])
        } catch {
            throw FileWriteError(path: directory, operation: "create directory", code: errno == 0 ? EIO : errno)
        }
    }

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

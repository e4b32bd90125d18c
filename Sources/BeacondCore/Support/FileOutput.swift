#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw FileWriteError(path: temporary, operation: "create", code: errno) }
        var offset = 0
        let failure: Int32? = bytes.withUnsafeBytes { raw in
            while offset < raw.count {
                guard let base = raw.baseAddress else { return nil }
                let written = Glibc.write(fd, base + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return fsync(fd) == 0 ? nil : errno
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

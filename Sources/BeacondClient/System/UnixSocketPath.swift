import CLinux
import Glibc

/// A Unix domain socket path and the few POSIX calls made on one outside SwiftNIO: the length
/// check, the liveness probe, and the file's identity (so shutdown removes only its own file).
package struct UnixSocketPath: Sendable, CustomStringConvertible {
    /// sun_path holds 108 bytes, the terminating NUL included.
    static let maxLength = 107

    let path: String

    package init(_ path: String) {
        self.path = path
    }

    package var description: String { path }

    /// Throws when the path cannot be a socket address.
    package func validate() throws(SocketPathError) {
        if path.isEmpty { throw .invalid(path: path, reason: "the socket path is empty") }
        if path.utf8.contains(0) { throw .invalid(path: path, reason: "the socket path contains a NUL byte") }
        if path.utf8.count > Self.maxLength {
            throw .invalid(
                path: path,
                reason: "the socket path is \(path.utf8.count) bytes long; "
                    + "a Unix socket path may be at most \(Self.maxLength) bytes")
        }
    }

    /// What answers at the path.
    package enum Probe: Equatable {
        /// Nothing there.
        case absent
        /// A socket file a daemon is listening on.
        case live
        /// A socket file nobody listens on.
        case stale
        /// A file that is not a socket.
        case notASocket
        /// The probe failed with this errno (EACCES, say).
        case failed(Int32)
    }

    /// Looks at the file, and if it is a socket, tries to connect to it (without blocking).
    package func probe() -> Probe {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            return errno == ENOENT ? .absent : .failed(errno)
        }
        guard info.st_mode & S_IFMT == S_IFSOCK else { return .notASocket }
        let fd = socket(
            AF_UNIX,
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
                | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return .failed(errno) }
        defer { close(fd) }
        let result = withAddress { address, length in connect(fd, address, length) }
        if result == 0 { return .live }
        switch errno {
        // A full backlog (EAGAIN) still means somebody listens.
        case EAGAIN, EINPROGRESS, EINTR: return .live
        case ECONNREFUSED: return .stale
        case ENOENT: return .absent
        case let code: return .failed(code)
        }
    }

    /// Creates a socket, binds it at the path (which must not exist) and listens on it; the
    /// caller owns the descriptor. The file is created with at most mode 0660 (the socket's mode is
    /// set before bind, and the umask applies on top); the caller sets the exact mode after bind.
    package func bindListening(backlog: Int32) throws(SocketPathError) -> CInt {
        try validate()
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .failed(path: path, operation: "socket", code: errno) }
        _ = fchmod(fd, 0o660)
        if withAddress({ address, length in bind(fd, address, length) }) != 0 {
            let code = errno
            close(fd)
            throw .failed(path: path, operation: "bind", code: code)
        }
        if listen(fd, backlog) != 0 {
            let code = errno
            close(fd)
            unlink()
            throw .failed(path: path, operation: "listen", code: code)
        }
        return fd
    }

    /// The file's identity, to recognise it later.
    package func identity() -> FileIdentity? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    package struct FileIdentity: Equatable, Sendable {
        var device: UInt64
        var inode: UInt64
    }

    /// Removes the file; true when it is gone (or was never there).
    @discardableResult
    package func unlink() -> Bool {
        Glibc.unlink(path) == 0 || errno == ENOENT
    }

    /// Calls `body` with a `sockaddr_un` for the path (which must be valid).
    func withAddress<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }
}

/// A socket path that cannot be used.
package enum SocketPathError: Error, CustomStringConvertible, Equatable {
    case invalid(path: String, reason: String)
    /// A system call failed with errno `code`.
    case failed(path: String, operation: String, code: Int32)

    package var description: String {
        switch self {
        case .invalid(let path, let reason): "\(path): \(reason)"
        case .failed(let path, let operation, let code):
            "\(path): \(operation): \(errnoText(code))"
        }
    }
}

import CLinux
import Glibc

/// Sockets systemd passed at start (socket activation): `LISTEN_FDS` descriptors from fd 3 on,
/// meant for the process `LISTEN_PID` names, with optional `LISTEN_FDNAMES`.
struct ListenFDs: Hashable, Sendable {
    static let firstFD: Int32 = 3
    /// More than this is not a sane `LISTEN_FDS`.
    static let maxCount = 4096

    var fds: [Int32]
    /// One name per descriptor (`LISTEN_FDNAMES`, colon-separated); "unknown" when not given.
    var names: [String]

    init(fds: [Int32] = [], names: [String] = []) {
        self.fds = fds
        self.names = names
    }

    var isEmpty: Bool { fds.isEmpty }

    /// Reads the variables without changing anything. Empty when they are absent, malformed, or
    /// `LISTEN_PID` is not `pid` (they were meant for a parent, and we inherited them by accident).
    static func parse(environment: [String: String], pid: pid_t) -> ListenFDs {
        guard let pidText = environment["LISTEN_PID"], let owner = Int64(pidText), owner == Int64(pid),
            let countText = environment["LISTEN_FDS"], let count = Int(countText), count > 0, count <= maxCount
        else { return ListenFDs() }
        let fds = (0..<Int32(count)).map { firstFD + $0 }
        var names =
            environment["LISTEN_FDNAMES"].map {
                $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            } ?? []
        if names.count != count { names = Array(repeating: "unknown", count: count) }
        return ListenFDs(fds: fds, names: names)
    }

    /// The descriptors systemd passed to this process, marked close-on-exec, as `sd_listen_fds(1)`
    /// does. The variables are removed from the environment either way (`unsetEnvironment`), so no
    /// child process mistakes them for its own.
    /// `unset` removes a variable (tests pass a recorder).
    static func inherited(
        environment: [String: String] = ProcessEnvironment.current(), pid: pid_t = getpid(),
        unsetEnvironment: Bool = true, unset: (String) -> Void = { _ = unsetenv($0) }
    ) -> ListenFDs {
        let result = parse(environment: environment, pid: pid)
        if unsetEnvironment {
            for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unset(name) }
        }
        for fd in result.fds {
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
        return result
    }

    /// The first passed descriptor that is a listening `AF_UNIX` stream socket, bound to `path`
    /// when one is given (what `sd_is_socket_unix` checks). nil: bind the socket yourself.
    func unixStreamListener(path: String? = nil) -> Int32? {
        fds.first { Self.isUnixStreamListener($0, path: path) }
    }

    static func isUnixStreamListener(_ fd: Int32, path: String? = nil) -> Bool {
        var type: Int32 = 0
        var listening: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) == 0, type == Int32(SOCK_STREAM.rawValue) else {
            return false
        }
        size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) == 0, listening != 0 else {
            return false
        }
        var storage = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let named = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0, storage.sun_family == sa_family_t(AF_UNIX) else { return false }
        guard let path else { return true }
        let offset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
        let pathLength = Int(length) - offset
        guard pathLength > 0 else { return false }
        let bound = withUnsafeBytes(of: &storage.sun_path) { raw in
            Array(raw.prefix(pathLength).prefix { $0 != 0 })
        }
        return bound == Array(path.utf8)
    }
}

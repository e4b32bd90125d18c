import CLinux
import Glibc

/// Where `$NOTIFY_SOCKET` points.
enum NotifySocketAddress: Hashable, Sendable {
    /// A file system path (`/run/systemd/notify`).
    case path(String)
    /// An abstract-namespace name, written `@name` in the variable.
    case abstract(String)

    /// nil for an unset, empty, relative, over-long or unsupported (`vsock:`) value.
    init?(_ value: String?) {
        guard let value, !value.isEmpty else { return nil }
        if value.hasPrefix("@") {
            let name = String(value.dropFirst())
            guard !name.isEmpty, name.utf8.count + 1 <= UnixSocketAddress.capacity else { return nil }
            self = .abstract(name)
        } else if value.hasPrefix("/") {
            guard value.utf8.count + 1 <= UnixSocketAddress.capacity else { return nil }
            self = .path(value)
        } else {
            return nil
        }
    }
}

/// Builds `sockaddr_un` values.
enum UnixSocketAddress {
    /// Bytes in `sun_path`.
    static let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)

    /// The address and its length for `bind`/`connect`/`sendto`: a path with its NUL, or an
    /// abstract name after a leading NUL and without a trailing one.
    static func make(_ address: NotifySocketAddress) -> (sockaddr_un, socklen_t) {
        var storage = sockaddr_un()
        storage.sun_family = sa_family_t(AF_UNIX)
        let bytes: [UInt8]
        switch address {
        case .path(let path): bytes = Array(path.utf8) + [0]
        case .abstract(let name): bytes = [0] + Array(name.utf8)
        }
        precondition(bytes.count <= capacity, "socket address too long")
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let offset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
        return (storage, socklen_t(offset + bytes.count))
    }
}

/// Talks to systemd's service manager with `sd_notify`-style datagrams to `$NOTIFY_SOCKET`.
/// Without `NOTIFY_SOCKET` (not run by systemd, or not `Type=notify`) every call does nothing.
///
/// Each message opens, sends on and closes a datagram socket, as `sd_notify` does: a handful a
/// minute costs nothing, and there is no descriptor to manage. (The status line that follows the
/// published state is throttled to one a second by a `KeyedCoalescer` of one key, `StatusKey`.)
struct SystemdNotifier: Sendable {
    /// The one key of the status line's coalescer.
    enum StatusKey: Hashable {
        case status
    }

    let address: NotifySocketAddress?

    init(environment: [String: String] = ProcessEnvironment.current()) {
        address = NotifySocketAddress(environment["NOTIFY_SOCKET"])
    }

    init(address: NotifySocketAddress?) { self.address = address }

    var isEnabled: Bool { address != nil }

    /// Sends `READY=1`, with a status line when given. Send it once the socket is listening.
    @discardableResult
    func ready(status: String? = nil) -> Bool {
        send(["READY=1"] + (status.map { ["STATUS=" + Self.oneLine($0)] } ?? []))
    }

    /// `STATUS=...`, shown by `systemctl status`. Newlines become spaces.
    @discardableResult
    func status(_ text: String) -> Bool { send(["STATUS=" + Self.oneLine(text)]) }

    /// `WATCHDOG=1`; send it every `watchdogInterval`.
    @discardableResult
    func watchdog() -> Bool { send(["WATCHDOG=1"]) }

    /// `STOPPING=1` at the start of a graceful shutdown.
    @discardableResult
    func stopping() -> Bool { send(["STOPPING=1"]) }

    /// `RELOADING=1` with the `MONOTONIC_USEC` systemd 253+ asks for; send `ready()` when the
    /// reload is done. Older systemd ignores both.
    @discardableResult
    func reloading(monotonicMicros: Int64 = MonotonicClock.micros()) -> Bool {
        send(["RELOADING=1", "MONOTONIC_USEC=\(monotonicMicros)"])
    }

    /// Sends newline-separated assignments as one datagram. False when disabled or when sending
    /// failed (systemd gone, or the message refused); a daemon carries on either way.
    @discardableResult
    func send(_ assignments: [String]) -> Bool {
        guard let address else { return false }
        let message = assignments.joined(separator: "\n")
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var (storage, length) = UnixSocketAddress.make(address)
        var bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bytes.withUnsafeMutableBytes { buffer in
                    sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), socketAddress, length)
                }
            }
        }
        return sent == bytes.count
    }

    /// How often to send `WATCHDOG=1`: half of `WATCHDOG_USEC`, in microseconds, as systemd
    /// recommends. nil when the watchdog is off, the value is not a positive integer, or
    /// `WATCHDOG_PID` names another process.
    static func watchdogInterval(
        environment: [String: String] = ProcessEnvironment.current(),
        pid: pid_t = getpid()
    ) -> Int64? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let owner = environment["WATCHDOG_PID"] {
            guard let owner = Int64(owner), owner == Int64(pid) else { return nil }
        }
        return Int64(min(usec, UInt64(Int64.max))) / 2
    }

    /// `STATUS=` takes one line.
    static func oneLine(_ text: String) -> String {
        String(text.unicodeScalars.map { $0 == "\n" || $0 == "\r" ? " " : Character($0) })
    }
}

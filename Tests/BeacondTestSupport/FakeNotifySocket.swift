import Foundation
import Glibc

/// A datagram socket bound where `$NOTIFY_SOCKET` points, standing in for systemd: for the notifier's
/// unit tests and for daemons started with `NOTIFY_SOCKET` set.
package final class FakeNotifySocket {
    package let fd: Int32
    /// The abstract name (without its leading NUL), or the path.
    package let name: String
    package let isAbstract: Bool
    /// What `NOTIFY_SOCKET` would hold.
    package let environmentValue: String

    package init(abstract: Bool) throws {
        let base = "beacond-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        isAbstract = abstract
        name = abstract ? base : NSTemporaryDirectory() + "/" + base
        environmentValue = abstract ? "@" + base : name
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket: \(String(cString: strerror(errno)))") }
        // Built here by hand rather than with beacond's own code, so the test checks the notifier's
        // encoding: an abstract name is a leading NUL, then the name, with no trailing NUL counted.
        var storage = sockaddr_un()
        storage.sun_family = sa_family_t(AF_UNIX)
        let bytes = abstract ? [0] + Array(base.utf8) : Array(name.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: storage.sun_path) else {
            throw TestSupportError("socket name too long: \(name)")
        }
        withUnsafeMutableBytes(of: &storage.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let fd = fd
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { throw TestSupportError("bind \(name): \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close(fd)
        if !isAbstract { unlink(name) }
    }

    /// The next datagram, or nil after two seconds.
    package func receive() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// Every datagram that arrives within `seconds`, with its arrival time (seconds from the start).
    package func collect(for seconds: Double) -> [(time: Double, text: String)] {
        var received: [(time: Double, text: String)] = []
        let start = Date()
        while Date().timeIntervalSince(start) < seconds {
            var probe = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&probe, 1, 20) > 0, let text = receive() else { continue }
            received.append((Date().timeIntervalSince(start), text))
        }
        return received
    }
}

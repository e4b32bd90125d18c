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
        // The kernel stamps each datagram as it arrives, so `collect` times sends, not reads: a test
        // process descheduled under load would read two datagrams sent a second apart together.
        var on: CInt = 1
        setsockopt(fd, SOL_SOCKET, SO_TIMESTAMP, &on, socklen_t(MemoryLayout<CInt>.size))
    }

    deinit {
        close(fd)
        if !isAbstract { unlink(name) }
    }

    /// The next datagram, or nil after two seconds.
    package func receive() -> String? { receiveStamped()?.text }

    /// The next datagram and the wall-clock time the kernel received it (Unix seconds), or nil after
    /// two seconds.
    package func receiveStamped() -> (text: String, time: Double)? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var control = [UInt8](repeating: 0, count: 64)
        var controlLength = 0
        let count = buffer.withUnsafeMutableBytes { data in
            control.withUnsafeMutableBytes { controlBytes in
                var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    var message = msghdr()
                    message.msg_iov = vectorPointer
                    message.msg_iovlen = 1
                    message.msg_control = controlBytes.baseAddress
                    message.msg_controllen = controlBytes.count
                    let received = recvmsg(fd, &message, 0)
                    controlLength = Int(message.msg_controllen)
                    return received
                }
            }
        }
        guard count >= 0 else { return nil }
        control.removeSubrange(min(control.count, controlLength)...)
        return (
            String(decoding: buffer[..<count], as: UTF8.self), Self.timestamp(control) ?? Date().timeIntervalSince1970
        )
    }

    /// The SCM_TIMESTAMP `timeval` in a control buffer (x86-64 and arm64 layout: a 16-byte
    /// `cmsghdr`, then the data), as Unix seconds.
    static func timestamp(_ control: [UInt8]) -> Double? {
        var offset = 0
        while offset + 16 <= control.count {
            let length = control[offset..<offset + 8].reversed().reduce(0) { $0 << 8 | Int($1) }
            let level = control[offset + 8..<offset + 12].reversed().reduce(0) { $0 << 8 | Int32($1) }
            let type = control[offset + 12..<offset + 16].reversed().reduce(0) { $0 << 8 | Int32($1) }
            guard length >= 16 else { return nil }
            if level == SOL_SOCKET, type == SO_TIMESTAMP, length >= 32, offset + 32 <= control.count {
                let seconds = control[offset + 16..<offset + 24].reversed().reduce(0) { $0 << 8 | Int64($1) }
                let micros = control[offset + 24..<offset + 32].reversed().reduce(0) { $0 << 8 | Int64($1) }
                return Double(seconds) + Double(micros) / 1e6
            }
            offset += (length + 7) & ~7
        }
        return nil
    }

    /// Every datagram that arrives within `seconds`, with the time the kernel received it (seconds
    /// from the start).
    package func collect(for seconds: Double) -> [(time: Double, text: String)] {
        var received: [(time: Double, text: String)] = []
        let start = Date()
        while Date().timeIntervalSince(start) < seconds {
            var probe = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&probe, 1, 20) > 0, let datagram = receiveStamped() else { continue }
            received.append((datagram.time - start.timeIntervalSince1970, datagram.text))
        }
        return received
    }
}

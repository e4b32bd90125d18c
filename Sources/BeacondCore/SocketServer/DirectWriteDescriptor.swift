import CLinux
import Glibc
import NIOCore

/// The publisher's own descriptor for one client's socket, for its direct writes
/// (`OutboundQueueHandler.writeDirectly`): a duplicate (F_DUPFD_CLOEXEC) of the descriptor the
/// server accepted (`SocketAcceptLoop`) before handing it to NIO. NIO owns and closes its own;
/// this one is the handler's, and is closed as soon as the channel goes inactive. So a direct
/// write never reaches a closed or reused descriptor, and nothing of NIO's internals is assumed.
/// (Until it is closed it also holds the connection open; the handler closes it in the same
/// turn of the loop as NIO's close.)
final class DirectWriteDescriptor {
    private var descriptor: CInt

    /// nil when no descriptor is left to duplicate into: that client gets every line through its
    /// channel.
    init?(duplicating original: CInt) {
        descriptor = fcntl(original, F_DUPFD_CLOEXEC, 0)
        guard descriptor >= 0 else { return nil }
    }

    deinit { close() }

    /// The descriptor while open, for socket options (tests shrink its send buffer).
    var value: CInt? { descriptor >= 0 ? descriptor : nil }

    /// One non-blocking `send(2)` of `line`; `.refused` once closed.
    func send(_ line: ByteBuffer) -> DirectSend {
        guard descriptor >= 0 else { return .refused }
        return DirectSend.send(line, to: descriptor)
    }

    func close() {
        guard descriptor >= 0 else { return }
        _ = Glibc.close(descriptor)
        descriptor = -1
    }
}

/// One non-blocking `send(2)` of a whole line, the outcome of a direct write.
enum DirectSend: Equatable {
    /// The socket took all of it.
    case complete
    /// The socket took the first `count` bytes (at least one, fewer than all).
    case partial(Int)
    /// The socket took nothing: full (EAGAIN), or failed; the channel's own write finds out which.
    case refused

    static func send(_ line: ByteBuffer, to descriptor: CInt) -> DirectSend {
        let total = line.readableBytes
        guard total > 0 else { return .complete }
        while true {
            let sent = line.withUnsafeReadableBytes { bytes in
                Glibc.send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            }
            if sent == total { return .complete }
            if sent > 0, sent < total { return .partial(sent) }
            if sent < 0, errno == EINTR { continue }
            return .refused
        }
    }
}

import Glibc
import NIOCore

/// The descriptor of a SwiftNIO socket channel, for the publisher's direct writes
/// (`OutboundQueueHandler.writeDirectly`).
///
/// SwiftNIO has no public accessor for it. It is read once per connection by reflection (the
/// channel's `socket`, and that socket's `descriptor`), then confirmed: the kernel's cookie of
/// the socket (SO_COOKIE, unique per socket for the boot) read through NIO's own descriptor must
/// equal the one read through the candidate. Anything unexpected (a newer NIO laid out
/// differently, a channel that is not a socket) gives nil, and the client simply gets every line
/// through the channel, as before: the direct path is an optimisation only.
enum SocketDescriptor {
    /// Calls `found` on the channel's event loop with its confirmed descriptor, or never.
    static func find(in channel: Channel, _ found: @escaping (CInt) -> Void) {
        guard let candidate = reflectedDescriptor(of: channel), candidate >= 0,
            let ours = cookie(of: candidate), let provider = channel as? SocketOptionProvider
        else { return }
        let theirs: EventLoopFuture<UInt64> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_COOKIE))
        theirs.assumeIsolated().whenSuccess { cookie in
            if cookie == ours { found(candidate) }
        }
    }

    /// SO_COOKIE of `descriptor`, nil when the kernel does not give one.
    static func cookie(of descriptor: CInt) -> UInt64? {
        var value: UInt64 = 0
        var length = socklen_t(MemoryLayout<UInt64>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_COOKIE, &value, &length) == 0,
            length == socklen_t(MemoryLayout<UInt64>.size), value != 0
        else { return nil }
        return value
    }

    private static func reflectedDescriptor(of channel: Channel) -> CInt? {
        guard let socket = child(named: "socket", of: channel) else { return nil }
        return child(named: "descriptor", of: socket) as? CInt
    }

    /// The stored property `name` of `subject` or of one of its superclasses.
    private static func child(named name: String, of subject: Any) -> Any? {
        var mirror: Mirror? = Mirror(reflecting: subject)
        while let current = mirror {
            for child in current.children where child.label == name { return child.value }
            mirror = current.superclassMirror
        }
        return nil
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

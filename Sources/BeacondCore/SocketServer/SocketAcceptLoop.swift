import CLinux
import Glibc
import Synchronization

/// The Unix socket server's listener, owned outright: its own thread waits in poll(2) on the
/// listening socket and on a `WakeSignal`, accepts every pending connection (non-blocking,
/// close-on-exec), reads the peer's user id (SO_PEERCRED) and hands the batch to the server,
/// which gives each descriptor to NIO. The server therefore knows every client's descriptor
/// without asking NIO for it (docs/threads.md, "socket accept").
///
/// When accepting fails for want of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) it
/// does not retry at once: it waits on the wake signal for a back-off (50 ms, doubling to 1 s
/// while the errors go on), so `stop()` still ends it at once.
final class SocketAcceptLoop: Sendable {
    /// One accepted connection: its descriptor (now the server's) and its peer's user id.
    struct Connection: Sendable {
        let descriptor: CInt
        let uid: UInt32?
    }

    /// The listener failed in a way that retrying cannot mend.
    struct Failure: Error, CustomStringConvertible {
        let code: CInt
        var description: String { "accept on the listening socket failed: \(errnoText(code))" }
    }

    static let firstBackoffMillis: Int32 = 50
    static let longestBackoffMillis: Int32 = 1000
    /// At most this many connections are handed over at once.
    static let batchLimit = 64

    /// accept4(2) on the listener: a descriptor, or -1 with errno set. Tests put failures in.
    typealias Accept = @Sendable (_ listener: CInt) -> CInt

    private let listener: CInt
    private let accept: Accept
    private let wake: WakeSignal
    private let stopping = Atomic<Bool>(false)

    /// `listener` must be a listening socket; it is made non-blocking and stays the caller's.
    // The wake signal is made before the loop: an init that throws after `stopping` (an Atomic) is
    // initialised crashes the Swift 6.3 optimiser (CopyPropagation, "Found ownership error").
    convenience init(
        listener: CInt,
        accept: @escaping Accept = { beacond_accept4($0, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue)) }
    ) throws(WakeSignal.Failure) {
        let wake = try WakeSignal()
        self.init(listener: listener, accept: accept, wake: wake)
    }

    private init(listener: CInt, accept: @escaping Accept, wake: WakeSignal) {
        self.listener = listener
        self.accept = accept
        self.wake = wake
        let flags = fcntl(listener, F_GETFL)
        if flags >= 0 { _ = fcntl(listener, F_SETFL, flags | O_NONBLOCK) }
    }

    /// Makes `run` return soon; harmless to call again.
    func stop() {
        stopping.store(true, ordering: .releasing)
        wake.signal()
    }

    /// Accepts until `stop()`. `accepted` gets each batch of new connections; `exhausted` gets
    /// the error number and the back-off before accepting pauses for want of resources. Both are
    /// called on this thread. Throws `Failure` when the listener itself is broken (closed
    /// underneath, not a socket).
    func run(accepted: ([Connection]) -> Void, exhausted: (CInt, Int32) -> Void) throws(Failure) {
        var backoff = Self.firstBackoffMillis
        while !stopping.load(ordering: .acquiring) {
            guard waitForListener() else { continue }
            var batch: [Connection] = []
            while !stopping.load(ordering: .acquiring) {
                let descriptor = accept(listener)
                if descriptor >= 0 {
                    backoff = Self.firstBackoffMillis
                    batch.append(Connection(descriptor: descriptor, uid: Self.peerUID(of: descriptor)))
                    if batch.count >= Self.batchLimit {
                        accepted(batch)
                        batch.removeAll(keepingCapacity: true)
                    }
                    continue
                }
                let code = errno
                if code == EINTR || code == ECONNABORTED || code == EPROTO || code == EPERM { continue }
                if code == EAGAIN || code == EWOULDBLOCK { break }
                if !batch.isEmpty { accepted(batch) }
                batch.removeAll()
                guard Self.isExhaustion(code) else { throw Failure(code: code) }
                exhausted(code, backoff)
                // The back-off is a wait on the wake signal, never a sleep: `stop()` ends it.
                wake.wait(micros: Int64(backoff) * 1000)
                backoff = min(backoff * 2, Self.longestBackoffMillis)
                break
            }
            if !batch.isEmpty { accepted(batch) }
        }
    }

    static func isExhaustion(_ code: CInt) -> Bool {
        code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM
    }

    /// True when the listener has a connection waiting; false on a wake or an interrupted poll.
    private func waitForListener() -> Bool {
        var descriptors = [
            pollfd(fd: listener, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0),
        ]
        guard poll(&descriptors, 2, -1) > 0 else { return false }
        if descriptors[1].revents != 0 { wake.drain() }
        return descriptors[0].revents != 0
    }

    /// The peer's user id (SO_PEERCRED), nil when the kernel does not give it.
    static func peerUID(of descriptor: CInt) -> UInt32? {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; }: three 32-bit fields, which a
        // homogeneous tuple lays out exactly (Swift's Glibc does not import ucred, a _GNU_SOURCE type).
        var credentials: (UInt32, UInt32, UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(UInt32, UInt32, UInt32)>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
            length == socklen_t(MemoryLayout<(UInt32, UInt32, UInt32)>.size)
        else { return nil }
        return credentials.1
    }
}

import CLinux
import Glibc
import NIOCore

/// Who is on the other end of a TCP connection to one of beacond's HTTP listeners, for their fair
/// share of its places (`FairShareRoster`).
///
/// A loopback peer is its user: the uid that owns the peer's socket, read from the kernel's socket
/// table (NETLINK_SOCK_DIAG, an exact lookup by the connection's addresses and ports, as `ss -e`
/// does). The kernel records the owner when the socket is made; a client cannot choose it, pass it
/// on or change it (only root can take another uid). A peer on another machine (a listener with
/// `--web-allow-remote`) is its IP address; a loopback peer whose socket is already gone is
/// `unknown`.
package enum HTTPPeer: Hashable, Sendable, CustomStringConvertible {
    case user(UInt32)
    case address(String)
    case unknown

    package var description: String {
        switch self {
        case .user(let uid): "uid \(uid)"
        case .address(let address): address
        case .unknown: "an unknown peer"
        }
    }

    /// The peer of the accepted connection `local` ↔ `remote`; `diag` asks the kernel (one
    /// netlink socket, kept open by the listener so that a lookup needs no new descriptor).
    static func of(local: SocketAddress?, remote: SocketAddress?, diag: SockDiagSocket = SockDiagSocket()) -> HTTPPeer {
        guard let local, let remote else { return .unknown }
        guard let query = SockDiagQuery(local: local, remote: remote), query.isLoopback else {
            return remote.ipAddress.map { .address($0) } ?? .unknown
        }
        return diag.ownerUID(query).map { .user($0) } ?? .unknown
    }
}

/// One exact lookup in the kernel's TCP socket table: the socket at the peer's end of an accepted
/// loopback connection, and the uid that owns it (`struct inet_diag_msg`'s `idiag_uid`).
struct SockDiagQuery {
    /// AF_INET or AF_INET6.
    var family: UInt8
    /// The peer's address and port (its socket's own end), in network byte order.
    var peerAddress: [UInt8]
    var peerPort: UInt16
    /// Ours.
    var localAddress: [UInt8]
    var localPort: UInt16

    init?(local: SocketAddress, remote: SocketAddress) {
        switch (local, remote) {
        case (.v4(let ours), .v4(let theirs)):
            family = UInt8(AF_INET)
            localAddress = withUnsafeBytes(of: ours.address.sin_addr) { Array($0) }
            peerAddress = withUnsafeBytes(of: theirs.address.sin_addr) { Array($0) }
        case (.v6(let ours), .v6(let theirs)):
            let localBytes = withUnsafeBytes(of: ours.address.sin6_addr) { Array($0) }
            let peerBytes = withUnsafeBytes(of: theirs.address.sin6_addr) { Array($0) }
            // An IPv4 client of a dual-stack listener: its socket is an AF_INET one.
            if let localV4 = Self.mappedIPv4(localBytes), let peerV4 = Self.mappedIPv4(peerBytes) {
                family = UInt8(AF_INET)
                localAddress = localV4
                peerAddress = peerV4
            } else {
                family = UInt8(AF_INET6)
                localAddress = localBytes
                peerAddress = peerBytes
            }
        default:
            return nil
        }
        guard let ourPort = local.port, let theirPort = remote.port,
            let ourPort16 = UInt16(exactly: ourPort), let theirPort16 = UInt16(exactly: theirPort)
        else { return nil }
        localPort = ourPort16
        peerPort = theirPort16
    }

    /// 127.0.0.0/8 or ::1 at the peer's end: its socket is in this machine's table.
    var isLoopback: Bool {
        if family == UInt8(AF_INET) { return peerAddress.first == 127 }
        return peerAddress.dropLast().allSatisfy { $0 == 0 } && peerAddress.last == 1
    }

    private static func mappedIPv4(_ bytes: [UInt8]) -> [UInt8]? {
        guard bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF
        else { return nil }
        return Array(bytes[12..<16])
    }

    /// nlmsghdr (16 bytes) + inet_diag_req_v2 (56): SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, the peer's
    /// socket as `id.src`/`id.sport`, ours as `id.dst`/`id.dport`, no cookie (INET_DIAG_NOCOOKIE).
    func request() -> [UInt8] {
        var bytes: [UInt8] = []
        func put32(_ value: UInt32) { withUnsafeBytes(of: value) { bytes += $0 } }
        func put16(_ value: UInt16) { withUnsafeBytes(of: value) { bytes += $0 } }
        func putAddress(_ address: [UInt8]) { bytes += address + [UInt8](repeating: 0, count: 16 - address.count) }
        put32(72)
        put16(20) // SOCK_DIAG_BY_FAMILY
        put16(1) // NLM_F_REQUEST
        put32(1)
        put32(0)
        bytes += [family, UInt8(IPPROTO_TCP), 0, 0]
        put32(UInt32.max) // every state
        put16(peerPort.bigEndian)
        put16(localPort.bigEndian)
        putAddress(peerAddress)
        putAddress(localAddress)
        put32(0)
        put32(UInt32.max)
        put32(UInt32.max)
        return bytes
    }

    /// The uid in the kernel's answer to this query; nil for an error (no such socket), or an
    /// answer about another socket.
    func uid(inReply reply: [UInt8]) -> UInt32? {
        // nlmsghdr, then inet_diag_msg: family, state, timer, retrans (4), id (48: sport, dport,
        // …), expires, rqueue, wqueue (12), uid at offset 64.
        guard reply.count >= 16 + 68 else { return nil }
        let type = UInt16(reply[4]) | UInt16(reply[5]) << 8
        guard type == 20, reply[16] == family else { return nil }
        let ports =
            withUnsafeBytes(of: peerPort.bigEndian) { Array($0) }
            + withUnsafeBytes(of: localPort.bigEndian) { Array($0) }
        guard Array(reply[20..<24]) == ports else { return nil }
        let at = 16 + 64
        return UInt32(reply[at]) | UInt32(reply[at + 1]) << 8 | UInt32(reply[at + 2]) << 16
            | UInt32(reply[at + 3]) << 24
    }
}

/// A NETLINK_SOCK_DIAG socket for `SockDiagQuery`, opened on first use and kept. Not thread-safe:
/// each listener has its own, used on its event loop.
final class SockDiagSocket {
    private var fd: CInt = -1

    deinit {
        if fd >= 0 { close(fd) }
    }

    /// Asks the kernel. Never blocks: the kernel answers a sock_diag request before `send` returns.
    func ownerUID(_ query: SockDiagQuery) -> UInt32? {
        if fd < 0 {
            // NETLINK_SOCK_DIAG is 4.
            fd = socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 4)
            guard fd >= 0 else { return nil }
        }
        var reply = [UInt8](repeating: 0, count: 1024)
        // Anything left from an earlier lookup goes first.
        while reply.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
        let message = query.request()
        // struct sockaddr_nl { sa_family_t nl_family; unsigned short nl_pad; __u32 nl_pid, nl_groups; }:
        // the kernel (pid 0), no groups. (Swift's Glibc does not import it.)
        var kernel = [UInt8](repeating: 0, count: 12)
        withUnsafeBytes(of: sa_family_t(AF_NETLINK)) { kernel.replaceSubrange(0..<2, with: $0) }
        let sent = message.withUnsafeBytes { bytes in
            kernel.withUnsafeBytes { address in
                sendto(
                    fd, bytes.baseAddress, bytes.count, 0, address.baseAddress?.assumingMemoryBound(to: sockaddr.self),
                    socklen_t(address.count))
            }
        }
        guard sent == message.count else { return nil }
        let received = reply.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        guard received > 0 else { return nil }
        return query.uid(inReply: Array(reply[..<received]))
    }
}

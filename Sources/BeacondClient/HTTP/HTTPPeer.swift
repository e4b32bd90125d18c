import Glibc
import NIOCore

/// Who is on the other end of a TCP connection to one of beacond's HTTP listeners, for their fair
/// share of its places (`FairShareRoster`).
///
/// A loopback peer is its user: the uid that owns the peer's socket, read from the kernel's socket
/// table (/proc/self/net/tcp and tcp6, a lookup by the connection's addresses and ports, as `ss -e`
/// shows it). The kernel records the owner when the socket is made; a client cannot choose it, pass it
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

    /// The peer of the accepted connection `local` ↔ `remote`, looked up in `table`.
    static func of(
        local: SocketAddress?, remote: SocketAddress?, table: TCPSocketTable = TCPSocketTable()
    ) -> HTTPPeer {
        guard let local, let remote else { return .unknown }
        guard let query = TCPConnectionQuery(local: local, remote: remote), query.isLoopback else {
            return remote.ipAddress.map { .address($0) } ?? .unknown
        }
        return table.ownerUID(query).map { .user($0) } ?? .unknown
    }
}

/// One lookup in the kernel's TCP socket table: the socket at the peer's end of an accepted
/// loopback connection, whose owner's uid is wanted.
struct TCPConnectionQuery {
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

    /// The peer's socket's own end and ours, as /proc/net/tcp and tcp6 write them: each 32-bit
    /// word of the address in hex as this machine stores it (so 127.0.0.1 is `0100007F` on x86),
    /// then the port in hex (`"0100007F:9C40"`).
    var tableColumns: (peer: String, local: String) {
        (Self.column(peerAddress, peerPort), Self.column(localAddress, localPort))
    }

    private static func column(_ address: [UInt8], _ port: UInt16) -> String {
        var text = ""
        for word in stride(from: 0, to: address.count, by: 4) {
            let value = address[word..<word + 4].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
            text += hex(UInt64(value), digits: 8)
        }
        return text + ":" + hex(UInt64(port), digits: 4)
    }

    private static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}

/// The kernel's TCP socket tables as this process's /proc/self/net/tcp and tcp6 show them: every
/// socket of the network namespace, with the uid that owns it. Readable under the units'
/// ProcSubset=pid (the tables are per process), so the daemon needs no netlink socket (the unit
/// refuses AF_NETLINK). A read takes at most `maximumBytes` of a table (about 30,000 sockets), on
/// the listener's event loop.
///
/// A table lists every connection, so one read answers every connection already established
/// when it was made: the owners it found are kept for `reuseMicros` and a lookup reads again only
/// when its connection is not among them. A flood of connections in the accept backlog costs one
/// read, not one per connection (one per connection made 1,100 keep-alive connections cost 85 %
/// of a core). A kept owner could only be wrong for a new connection on the same addresses and
/// ports within that second, which TIME_WAIT rules out (on loopback, Linux reuses a port only
/// once the old connection's last timestamp is over a second old); and an owner decides no more
/// than whose connection makes room.
final class TCPSocketTable {
    static let maximumBytes = 4 << 20
    static let reuseMicros: Int64 = 1_000_000
    private let directory: String
    /// Per table file: the owners by "peer local" columns, and when they were read.
    private var owners: [String: (read: Int64, uids: [String: UInt32])] = [:]
    private(set) var reads = 0

    init(directory: String = "/proc/self/net") { self.directory = directory }

    /// The uid owning the peer's socket; nil when the table has no such connection (the peer has
    /// gone) or cannot be read.
    func ownerUID(_ query: TCPConnectionQuery, now: Int64 = MonotonicClock.micros()) -> UInt32? {
        let path = directory + (query.family == UInt8(AF_INET) ? "/tcp" : "/tcp6")
        let columns = query.tableColumns
        let key = columns.peer + " " + columns.local
        if let kept = owners[path], now &- kept.read < Self.reuseMicros, let uid = kept.uids[key] { return uid }
        guard let table = Self.contents(of: path) else { return nil }
        reads += 1
        let uids = Self.owners(in: table)
        owners[path] = (now, uids)
        return uids[key]
    }

    /// The uid of the line whose local address is the peer's and remote address ours (columns:
    /// sl, local_address, rem_address, st, tx:rx queue, tr:when, retrnsmt, uid).
    static func ownerUID(in table: [UInt8], _ columns: (peer: String, local: String)) -> UInt32? {
        owners(in: table)[columns.peer + " " + columns.local]
    }

    /// Every line's uid by its "local_address rem_address" columns.
    static func owners(in table: [UInt8]) -> [String: UInt32] {
        var uids: [String: UInt32] = [:]
        for line in table.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            let fields = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
            guard fields.count > 7, let uid = UInt32(String(decoding: fields[7], as: UTF8.self)) else { continue }
            uids[String(decoding: fields[1], as: UTF8.self) + " " + String(decoding: fields[2], as: UTF8.self)] = uid
        }
        return uids
    }

    private static func contents(of path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var table: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while table.count < maximumBytes {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            table += chunk[..<count]
        }
        return table
    }
}

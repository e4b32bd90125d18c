import CBlueZ
import CLinux
import Glibc

/// What one read of an HCI transport returned.
package enum HCIReadResult: Hashable, Sendable {
    /// One packet of this many bytes, H4 type byte first.
    case packet(Int)
    /// Nothing queued (EAGAIN).
    case wouldBlock
    /// A signal interrupted the call (EINTR): try again.
    case interrupted
    /// The other end is gone (a read of 0).
    case closed
    case failed(errno: Int32)
}

/// What one write of an HCI transport did.
package enum HCIWriteResult: Hashable, Sendable {
    case written
    case wouldBlock
    case interrupted
    case failed(errno: Int32)
}

/// A packet-oriented, non-blocking HCI connection: one read or write moves exactly one H4
/// packet. The daemon's is a raw HCI socket; tests and the benchmark use a SOCK_SEQPACKET
/// socketpair, which keeps packet boundaries the same way.
package protocol HCITransport: AnyObject {
    /// A descriptor to poll for POLLIN (and POLLOUT when a write would block).
    var descriptor: Int32 { get }
    /// The kernel's index of the adapter, for its stack-internal device events; nil when the
    /// transport is not a kernel adapter.
    var deviceID: UInt16? { get }
    /// A second descriptor to poll for POLLIN, whose packets `read` also returns: the kernel's
    /// device events (see `HCIRawSocket.open`); -1 when there is none.
    var deviceEventDescriptor: Int32 { get }
    func read(into buffer: UnsafeMutableRawBufferPointer) -> HCIReadResult
    /// Several packets in one call where the transport can (`recvmmsg`); by default one `read`.
    func readBatch(into batch: HCIReadBatch) -> HCIBatchReadResult
    func write(_ packet: UnsafeRawBufferPointer) -> HCIWriteResult
    /// Attaches the kernel filter to the socket: 0, or the errno (EOPNOTSUPP: no socket to filter).
    func attachReportFilter(_ filter: HCIKernelFilter) -> Int32
    /// Detaches it: 0, or the errno (ENOENT: none was attached).
    func detachReportFilter() -> Int32
    /// Closes the descriptor; later reads fail.
    func close()
}

extension HCITransport {
    package var deviceEventDescriptor: Int32 { -1 }
    package func attachReportFilter(_ filter: HCIKernelFilter) -> Int32 { EOPNOTSUPP }
    package func detachReportFilter() -> Int32 { EOPNOTSUPP }
}

/// An HCI transport over a descriptor it owns: a raw HCI socket or one end of a socketpair.
package final class DescriptorHCITransport: HCITransport {
    package private(set) var descriptor: Int32
    package let deviceID: UInt16?
    package private(set) var deviceEventDescriptor: Int32

    /// Takes ownership of `descriptor` (and of `deviceEventDescriptor`, -1 for none) and makes
    /// them non-blocking.
    package init(descriptor: Int32, deviceID: UInt16? = nil, deviceEventDescriptor: Int32 = -1) {
        self.descriptor = descriptor
        self.deviceID = deviceID
        self.deviceEventDescriptor = deviceEventDescriptor
        for owned in [descriptor, deviceEventDescriptor] where owned >= 0 {
            let flags = fcntl(owned, F_GETFL)
            if flags >= 0 { _ = fcntl(owned, F_SETFL, flags | O_NONBLOCK) }
        }
    }

    deinit { close() }

    /// A packet from the adapter's socket, or else one from the device events' socket. The
    /// second socket failing never ends the transport: its notices are a help, not the data.
    package func read(into buffer: UnsafeMutableRawBufferPointer) -> HCIReadResult {
        let result = Self.read(descriptor, into: buffer)
        guard result == .wouldBlock, deviceEventDescriptor >= 0 else { return result }
        if case .packet(let count) = Self.read(deviceEventDescriptor, into: buffer) { return .packet(count) }
        return .wouldBlock
    }

    private static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) -> HCIReadResult {
        let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
        if count > 0 { return .packet(count) }
        if count == 0 { return .closed }
        switch errno {
        case EAGAIN, EWOULDBLOCK: return .wouldBlock
        case EINTR: return .interrupted
        case let code: return .failed(errno: code)
        }
    }

    package func write(_ packet: UnsafeRawBufferPointer) -> HCIWriteResult {
        let count = Glibc.write(descriptor, packet.baseAddress, packet.count)
        if count == packet.count { return .written }
        if count >= 0 { return .failed(errno: EMSGSIZE) }
        switch errno {
        case EAGAIN, EWOULDBLOCK: return .wouldBlock
        case EINTR: return .interrupted
        case let code: return .failed(errno: code)
        }
    }

    package func attachReportFilter(_ filter: HCIKernelFilter) -> Int32 {
        descriptor >= 0 ? filter.attach(to: descriptor) : EBADF
    }

    package func detachReportFilter() -> Int32 {
        descriptor >= 0 ? HCIKernelFilter.detach(from: descriptor) : EBADF
    }

    package func close() {
        if deviceEventDescriptor >= 0 { _ = Glibc.close(deviceEventDescriptor) }
        deviceEventDescriptor = -1
        guard descriptor >= 0 else { return }
        _ = Glibc.close(descriptor)
        descriptor = -1
    }
}

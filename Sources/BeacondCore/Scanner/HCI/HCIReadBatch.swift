import CLinux
import Glibc

/// What one batched read of an HCI transport returned.
package enum HCIBatchReadResult: Hashable, Sendable {
    /// `count` packets (at least one) in the batch's first slots, their lengths in `length(at:)`.
    /// `drained`: the transport said nothing more is queued (the read stopped short of the batch's
    /// capacity), so another read now would only return `.wouldBlock`.
    case packets(count: Int, drained: Bool)
    /// Nothing queued (EAGAIN).
    case wouldBlock
    /// A signal interrupted the call (EINTR): try again.
    case interrupted
    /// The other end is gone (a read of 0 before any packet).
    case closed
    case failed(errno: Int32)
}

/// Room for `capacity` packets of up to `slotSize` bytes each, and the `recvmmsg(2)` vectors that
/// point at them (`beacond_recvmmsg`, the C shim's): allocated once per channel, so reading a batch allocates nothing.
///
/// recvmmsg, measured on Linux 6.1 on the socket types the scanner meets (the daemon's raw HCI
/// socket keeps packet boundaries like SOCK_SEQPACKET; tests and the benchmark use a SOCK_SEQPACKET
/// socketpair; an AF_UNIX SOCK_RAW socketpair is turned into SOCK_DGRAM by the kernel):
/// - with MSG_DONTWAIT it returns the packets queued, up to `capacity`, one per slot, or -1 with
///   EAGAIN when none is, on all three; fewer than `capacity` means the queue was drained;
/// - a packet longer than its slot is cut to the slot (msg_len is the slot size, MSG_TRUNC set);
/// - SOCK_SEQPACKET after the peer closed: every remaining slot gets a zero-length message
///   (msg_len 0), counted in the return value; a datagram socket just has nothing more (EAGAIN).
///   So a zero length is "closed", as a `read(2)` of 0 is.
package final class HCIReadBatch {
    package let capacity: Int
    package let slotSize: Int
    private let storage: UnsafeMutableRawBufferPointer
    private let vectors: UnsafeMutableBufferPointer<iovec>
    let headers: UnsafeMutableBufferPointer<beacond_mmsghdr>

    package init(capacity: Int, slotSize: Int) {
        self.capacity = max(1, capacity)
        self.slotSize = max(1, slotSize)
        storage = .allocate(byteCount: self.capacity * self.slotSize, alignment: 8)
        vectors = .allocate(capacity: self.capacity)
        headers = .allocate(capacity: self.capacity)
        for index in 0..<self.capacity {
            let base = storage.baseAddress.map { $0 + index * self.slotSize }
            vectors.initializeElement(at: index, to: iovec(iov_base: base, iov_len: self.slotSize))
            var header = beacond_mmsghdr()
            header.msg_hdr.msg_iov = vectors.baseAddress.map { $0 + index }
            header.msg_hdr.msg_iovlen = 1
            headers.initializeElement(at: index, to: header)
        }
    }

    deinit {
        storage.deallocate()
        vectors.deallocate()
        headers.deallocate()
    }

    /// Slot `index`'s whole buffer, to read one packet into.
    package func slot(_ index: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: storage[index * slotSize..<(index + 1) * slotSize])
    }

    /// The bytes of the packet in slot `index`, as long as the read said (never past the slot).
    package func packet(_ index: Int) -> UnsafeRawBufferPointer {
        let length = min(Int(headers[index].msg_len), slotSize)
        return UnsafeRawBufferPointer(rebasing: storage[index * slotSize..<index * slotSize + length])
    }

    /// Records that slot `index` holds a packet of `length` bytes (for reads that are not recvmmsg).
    package func setLength(_ length: Int, at index: Int) {
        headers[index].msg_len = UInt32(clamping: max(0, length))
    }

    /// Packets queued on `descriptor`, into slots `first...` (one recvmmsg call, non-blocking).
    /// Returns how many were read, or the errno of a call that read none.
    func receive(from descriptor: Int32, startingAt first: Int = 0) -> Result<Int, Errno> {
        guard first < capacity, let base = headers.baseAddress else { return .success(0) }
        for index in first..<capacity { headers[index].msg_hdr.msg_flags = 0 }
        let count = beacond_recvmmsg(descriptor, base + first, UInt32(capacity - first), Int32(MSG_DONTWAIT))
        return count >= 0 ? .success(Int(count)) : .failure(Errno(errno))
    }

    struct Errno: Error {
        var code: Int32
        init(_ code: Int32) { self.code = code }
    }
}

extension HCITransport {
    /// One packet through `read(into:)`, for transports that cannot read several at once.
    package func readBatch(into batch: HCIReadBatch) -> HCIBatchReadResult {
        switch read(into: batch.slot(0)) {
        case .packet(let count):
            batch.setLength(count, at: 0)
            return .packets(count: 1, drained: false)
        case .wouldBlock: return .wouldBlock
        case .interrupted: return .interrupted
        case .closed: return .closed
        case .failed(let code): return .failed(errno: code)
        }
    }
}

extension DescriptorHCITransport {
    /// Every packet queued on the adapter's socket, up to the batch's capacity, in one
    /// `recvmmsg(2)`; when that drained it, one packet from the device events' socket in the next
    /// free slot (its notices are rare, and a failure there never ends the transport).
    /// A zero-length message (the peer closed a SOCK_SEQPACKET end) ends the packets before it:
    /// `.closed` when it is the first.
    package func readBatch(into batch: HCIReadBatch) -> HCIBatchReadResult {
        var count = 0
        switch batch.receive(from: descriptor) {
        case .success(let received):
            for index in 0..<received where batch.headers[index].msg_len == 0 {
                return index == 0 ? .closed : .packets(count: index, drained: false)
            }
            count = received
        case .failure(let error):
            switch error.code {
            case EAGAIN, EWOULDBLOCK: break
            case EINTR: return .interrupted
            case let code: return .failed(errno: code)
            }
        }
        guard count < batch.capacity else { return .packets(count: count, drained: false) }
        if deviceEventDescriptor >= 0 {
            let length = Glibc.read(deviceEventDescriptor, batch.slot(count).baseAddress, batch.slotSize)
            if length > 0 {
                batch.setLength(length, at: count)
                count += 1
            }
        }
        return count > 0 ? .packets(count: count, drained: true) : .wouldBlock
    }
}

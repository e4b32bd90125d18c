import BLEPayload
import Glibc
import Synchronization

/// One HCI command: an opcode and its parameters.
package struct HCICommand: Hashable, Sendable {
    package static let packetType: UInt8 = 0x01

    package var opcode: UInt16
    package var parameters: [UInt8]

    package init(opcode: UInt16, parameters: [UInt8]) {
        self.opcode = opcode
        self.parameters = parameters
    }

    /// The H4 packet: type 0x01, opcode little-endian, parameter length, parameters.
    var packet: [UInt8] {
        [Self.packetType, UInt8(truncatingIfNeeded: opcode), UInt8(opcode >> 8), UInt8(parameters.count)] + parameters
    }
}

/// The controller's answer to a command: Command Complete (status, then the return
/// parameters) or Command Status (a status alone).
struct HCICommandResponse: Hashable, Sendable {
    var status: UInt8
    /// Command Complete's return parameters after the status.
    var parameters: [UInt8]
}

/// The HCI backend's counters, readable from any thread.
package final class HCIScannerCounters: Sendable {
    package struct Snapshot: Hashable, Sendable {
        var events = 0
        var reports = 0
        /// Read bursts that read at least one packet (the reader's wake-ups with work).
        package var bursts = 0
        package var malformed = 0
        var restarts = 0
        var reconnects = 0
        /// System calls a signal interrupted and that were retried.
        var interruptions = 0
    }

    let events = Atomic<Int>(0)
    let reports = Atomic<Int>(0)
    let bursts = Atomic<Int>(0)
    let malformed = Atomic<Int>(0)
    /// Scans the silence watchdog restarted.
    let restarts = Atomic<Int>(0)
    /// Times the adapter came back after it was lost.
    let reconnects = Atomic<Int>(0)
    let interruptions = Atomic<Int>(0)
    /// Why the last malformed packet was skipped, with its byte offset: for status, since a
    /// live stream logs nothing per packet.
    private let lastMalformedReason = Mutex<String?>(nil)

    var lastMalformed: String? { lastMalformedReason.withLock { $0 } }

    func recordMalformed(_ reason: String) {
        malformed.add(1, ordering: .relaxed)
        lastMalformedReason.withLock { $0 = reason }
    }

    package var snapshot: Snapshot {
        Snapshot(
            events: events.load(ordering: .relaxed), reports: reports.load(ordering: .relaxed),
            bursts: bursts.load(ordering: .relaxed), malformed: malformed.load(ordering: .relaxed),
            restarts: restarts.load(ordering: .relaxed),
            reconnects: reconnects.load(ordering: .relaxed), interruptions: interruptions.load(ordering: .relaxed))
    }
}

/// Reads an HCI transport and sends it commands, on one thread.
///
/// Every packet read goes through `readBurst`: LE Meta events are decoded into reports for the
/// sink, Command Complete and Command Status answer the command `send` waits for, and the
/// kernel's stack-internal events say when the adapter went down. So advertisements that arrive
/// while a command is pending are delivered, not lost. Nothing on the report path allocates:
/// packets land in one batch of buffers (`HCIReadBatch`), and reports borrow them.
final class HCICommandChannel {
    /// Room for any HCI event (at most 2 + 255 bytes) plus the H4 type byte.
    static let bufferSize = 1024
    /// A burst stops after this many packets, so a flood still flushes and checks for shutdown.
    static let maxPacketsPerBurst = 256
    /// Packets one system call reads at most (recvmmsg): a 1 ms USB interrupt interval at
    /// 50,000 reports/s brings about 50.
    static let packetsPerRead = 64

    enum BurstEnd: Hashable {
        case drained(packets: Int)
        case lost(reason: String)
    }

    let transport: any HCITransport
    let adapter: String
    private let sink: any AdvertisementSink
    private let recorder: BTSnoopRecorder?
    private let counters: HCIScannerCounters
    private let wake: WakeSignal?
    private var decoder = HCIEventDecoder()
    private let batch = HCIReadBatch(
        capacity: HCICommandChannel.packetsPerRead, slotSize: HCICommandChannel.bufferSize)
    private var pendingOpcode: UInt16?
    private var response: HCICommandResponse?
    /// Set when the kernel said the adapter went down or away.
    private var lostReason: String?
    /// CLOCK_BOOTTIME µs of the last advertising report, or of the channel's creation.
    private(set) var lastReportBoot: Int64

    init(
        transport: any HCITransport, adapter: String, sink: any AdvertisementSink, recorder: BTSnoopRecorder?,
        counters: HCIScannerCounters, wake: WakeSignal?
    ) {
        self.transport = transport
        self.adapter = adapter
        self.sink = sink
        self.recorder = recorder
        self.counters = counters
        self.wake = wake
        lastReportBoot = MonotonicClock.bootMicros()
    }

    /// Restarts the silence clock (after the scan was enabled).
    func resetSilence() { lastReportBoot = MonotonicClock.bootMicros() }

    // MARK: Reading

    private struct Tally {
        var events = 0
        var reports = 0
        var interruptions = 0
    }

    /// Reads packets until none is queued (or `maxPacketsPerBurst`), a batch of up to
    /// `packetsPerRead` per system call (`HCITransport.readBatch`), handles each in order, then
    /// flushes the sink once: one hop to the hub per burst. `.lost` when the transport closed or
    /// failed, or the adapter went down (the packets read before that are handled first).
    func readBurst() -> BurstEnd {
        var tally = Tally()
        var packets = 0
        var end = BurstEnd.drained(packets: 0)
        reading: while packets < Self.maxPacketsPerBurst {
            switch transport.readBatch(into: batch) {
            case .packets(let count, let drained):
                let boot = MonotonicClock.bootMicros()
                let wall = MonotonicClock.wallMicros()
                for index in 0..<min(count, batch.capacity) {
                    packets += 1
                    handle(batch.packet(index), boot: boot, wall: wall, &tally)
                    if let lostReason {
                        end = .lost(reason: lostReason)
                        break reading
                    }
                }
                if drained { break reading }
            case .wouldBlock:
                break reading
            case .interrupted:
                tally.interruptions += 1
            case .closed:
                end = .lost(reason: "its socket was closed")
                break reading
            case .failed(let code):
                end = .lost(reason: errnoText(code))
                break reading
            }
        }
        if case .drained = end { end = .drained(packets: packets) }
        if packets > 0 { counters.bursts.add(1, ordering: .relaxed) }
        if tally.events > 0 { counters.events.add(tally.events, ordering: .relaxed) }
        if tally.reports > 0 { counters.reports.add(tally.reports, ordering: .relaxed) }
        if tally.interruptions > 0 { counters.interruptions.add(tally.interruptions, ordering: .relaxed) }
        sink.flush()
        return end
    }

    /// One packet read at `boot`/`wall` µs. Lengths are checked before any byte is read: a packet
    /// shorter or longer than its header says is malformed and skipped.
    private func handle(_ packet: UnsafeRawBufferPointer, boot: Int64, wall: Int64, _ tally: inout Tally) {
        // The kernel's own device notices are not the controller's traffic: not recorded.
        if packet.count < 2 || packet[1] != HCIRawSocket.stackInternalEvent {
            recorder?.record(packet, sent: false, wallMicros: wall)
        }
        guard let type = packet.first, type == HCIRawSocket.eventPacket else { return }
        tally.events += 1
        guard packet.count >= 3, Int(packet[2]) == packet.count - 3 else {
            let declared = packet.count >= 3 ? "\(packet[2])" : "no"
            return counters.recordMalformed(
                "an event packet of \(packet.count) bytes declares \(declared) parameter bytes (byte 2)")
        }
        let event = UnsafeRawBufferPointer(rebasing: packet[1...])
        switch event[0] {
        case HCIEventCode.leMeta:
            let sink = sink
            var reports = 0
            let outcome = decoder.decode(event: event, timestamp: wall) { report in
                reports += 1
                sink.receive(report, bootMicros: boot)
            }
            tally.reports += reports
            if reports > 0 { lastReportBoot = boot }
            if case .malformed(let error) = outcome { counters.recordMalformed("LE Meta event: \(error)") }
        case HCIEventCode.commandComplete:
            // [0x0E][length][Num_HCI_Command_Packets][opcode LE][status][return parameters]
            guard event.count >= 5 else {
                return counters.recordMalformed(
                    "Command Complete of \(event.count) bytes, shorter than its 5-byte header")
            }
            let opcode = UInt16(event[3]) | UInt16(event[4]) << 8
            if opcode == HCIOpcode.reset, pendingOpcode != HCIOpcode.reset {
                // Someone else reset the controller (the kernel bringing it up, `hciconfig reset`):
                // its scan is off now, and only starting over turns it on again.
                lostReason = "the kernel reset the controller"
                return
            }
            guard opcode == pendingOpcode else { return }
            let returned = event[5...]
            response = HCICommandResponse(
                status: returned.first ?? HCIStatus.success,
                parameters: Array(returned.dropFirst()))
        case HCIEventCode.commandStatus:
            // [0x0F][length][status][Num_HCI_Command_Packets][opcode LE]
            guard event.count >= 6 else {
                return counters.recordMalformed("Command Status of \(event.count) bytes, shorter than its 6 bytes")
            }
            let opcode = UInt16(event[4]) | UInt16(event[5]) << 8
            guard opcode == pendingOpcode else { return }
            response = HCICommandResponse(status: event[2], parameters: [])
        case HCIRawSocket.stackInternalEvent:
            handleStackInternal(event)
        default:
            break
        }
    }

    /// [0xFD][6][type 0x0001 LE][device event LE][device id LE]: the kernel's note that an
    /// adapter was unregistered (2) or went down (4).
    private func handleStackInternal(_ event: UnsafeRawBufferPointer) {
        guard event.count >= 8 else {
            return counters.recordMalformed("a stack-internal event of \(event.count) bytes, shorter than its 8 bytes")
        }
        let type = UInt16(event[2]) | UInt16(event[3]) << 8
        let deviceEvent = UInt16(event[4]) | UInt16(event[5]) << 8
        let device = UInt16(event[6]) | UInt16(event[7]) << 8
        guard type == 0x0001, let ours = transport.deviceID, device == ours else { return }
        switch deviceEvent {
        case 2: lostReason = "the kernel unregistered it"
        case 4: lostReason = "it was brought down"
        default: break
        }
    }

    // MARK: Commands

    /// Sends `command` and waits up to `timeout` µs for its Command Complete or Command Status,
    /// delivering the advertisements that arrive meanwhile. When `interruptible`, a shutdown
    /// request ends the wait with `.shuttingDown`.
    func send(_ command: HCICommand, timeout: Int64, interruptible: Bool = true)
        throws(HCIScannerError) -> HCICommandResponse
    {
        let deadline = MonotonicClock.micros() + timeout
        pendingOpcode = command.opcode
        response = nil
        defer {
            pendingOpcode = nil
            response = nil
        }
        let packet = command.packet
        try write(packet, command: command, deadline: deadline, timeout: timeout)
        packet.withUnsafeBytes { recorder?.record($0, sent: true, wallMicros: MonotonicClock.wallMicros()) }
        while true {
            if let response { return response }
            if let lostReason { throw .adapterGone(adapter: adapter, reason: lostReason) }
            let remaining = deadline - MonotonicClock.micros()
            guard remaining > 0 else {
                throw .commandTimeout(adapter: adapter, opcode: command.opcode, timeout: timeout)
            }
            switch try wait(for: Int16(POLLIN), micros: remaining, interruptible: interruptible) {
            case .ready(let revents):
                switch readBurst() {
                case .lost(let reason):
                    throw .adapterGone(adapter: adapter, reason: reason)
                case .drained(let packets):
                    if packets == 0, revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                        throw .adapterGone(adapter: adapter, reason: "its socket reported an error")
                    }
                }
            case .timedOut, .interrupted, .nudged:
                continue
            }
        }
    }

    /// Sends `command` and requires status success, or one of `tolerated`.
    @discardableResult
    func execute(
        _ command: HCICommand, timeout: Int64, tolerating tolerated: Set<UInt8> = [],
        interruptible: Bool = true
    ) throws(HCIScannerError) -> HCICommandResponse {
        let response = try send(command, timeout: timeout, interruptible: interruptible)
        guard response.status == HCIStatus.success || tolerated.contains(response.status) else {
            throw .commandFailed(adapter: adapter, opcode: command.opcode, status: response.status)
        }
        return response
    }

    private func write(_ packet: [UInt8], command: HCICommand, deadline: Int64, timeout: Int64)
        throws(HCIScannerError)
    {
        while true {
            let result = packet.withUnsafeBytes { transport.write($0) }
            switch result {
            case .written:
                return
            case .interrupted:
                counters.interruptions.add(1, ordering: .relaxed)
            case .wouldBlock:
                let remaining = deadline - MonotonicClock.micros()
                guard remaining > 0 else {
                    throw .commandTimeout(adapter: adapter, opcode: command.opcode, timeout: timeout)
                }
                _ = try wait(for: Int16(POLLOUT), micros: remaining, interruptible: true)
            case .failed(let code):
                switch code {
                case ENODEV, EPIPE, EBADF, ENOTCONN, ECONNRESET:
                    throw .adapterGone(adapter: adapter, reason: errnoText(code))
                default:
                    throw .fromErrno(code, adapter: adapter, operation: "send \(HCIOpcode.describe(command.opcode))")
                }
            }
        }
    }

    enum WaitResult: Hashable {
        case ready(revents: Int16)
        case timedOut
        case interrupted
        /// `nudge` was signalled (and is drained).
        case nudged
    }

    /// Polls the transport for `events` for up to `micros` (nil: no limit) and, when
    /// `interruptible`, the wake signal too, which ends the wait with `.shuttingDown`; and
    /// `nudge`, which ends it with `.nudged`.
    func wait(for events: Int16, micros: Int64?, interruptible: Bool, nudge: WakeSignal? = nil)
        throws(HCIScannerError) -> WaitResult
    {
        // The device events' descriptor only when reading: a notice waiting there must not end a
        // wait for POLLOUT again and again (poll skips a -1).
        let deviceEvents = events & Int16(POLLIN) != 0 ? transport.deviceEventDescriptor : -1
        var fds = (
            pollfd(fd: transport.descriptor, events: events, revents: 0),
            pollfd(fd: deviceEvents, events: Int16(POLLIN), revents: 0),
            pollfd(fd: interruptible ? wake?.descriptor ?? -1 : -1, events: Int16(POLLIN), revents: 0),
            pollfd(fd: nudge?.descriptor ?? -1, events: Int16(POLLIN), revents: 0)
        )
        let milliseconds = micros.map { Int32(clamping: $0 <= 0 ? 0 : ($0 + 999) / 1000) } ?? -1
        let ready = withUnsafeMutablePointer(to: &fds) {
            $0.withMemoryRebound(to: pollfd.self, capacity: 4) { poll($0, 4, milliseconds) }
        }
        if ready < 0 {
            guard errno == EINTR else {
                throw .system(adapter: adapter, operation: "poll its socket", errno: errno)
            }
            counters.interruptions.add(1, ordering: .relaxed)
            return .interrupted
        }
        if fds.2.revents != 0 { throw .shuttingDown }
        if fds.3.revents != 0, fds.0.revents == 0 {
            nudge?.drain()
            return .nudged
        }
        return ready == 0 ? .timedOut : .ready(revents: fds.0.revents)
    }
}

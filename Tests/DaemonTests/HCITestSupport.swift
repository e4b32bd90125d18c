@testable import BeacondCore
import BLEPayload
import Glibc
import Logging
import Synchronization

/// Polls `condition` every millisecond until it holds or `seconds` pass. Sleeps with
/// `Task.sleep`, so a waiting test never blocks a cooperative thread other tests need.
func waitUntil(within seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = MonotonicClock.micros() + Int64(seconds * 1_000_000)
    while !condition() {
        if MonotonicClock.micros() >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

/// A scripted HCI controller on the far end of a SOCK_SEQPACKET socketpair: a thread answers
/// each command with Command Complete (or Command Status), and tests inject events.
final class FakeController: @unchecked Sendable {
    struct Script: Sendable {
        /// LE Read Local Supported Features' 8 bytes.
        var leFeatures = [UInt8](repeating: 0, count: 8)
        /// Read Local Supported Commands' 64 bytes.
        var supportedCommands = [UInt8](repeating: 0, count: 64)
        /// The status to answer a command with; nil: never answer.
        var status: @Sendable (HCICommand) -> UInt8? = { _ in HCIStatus.success }
        /// Answer with Command Status instead of Command Complete.
        var answerWithCommandStatus: @Sendable (HCICommand) -> Bool = { _ in false }

        static let legacy = Script()

        /// LE feature bit 12 and supported-commands octet 37 bits 5 and 6.
        static var extended: Script {
            var script = Script()
            script.leFeatures[1] = 0x10
            script.supportedCommands[37] = 0x60
            return script
        }
    }

    /// The backend's end.
    let transport: DescriptorHCITransport
    private let core: Core

    init(_ script: Script = .legacy, deviceID: UInt16? = nil) {
        var pair: [Int32] = [-1, -1]
        let result = socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair)
        precondition(result == 0, "socketpair: \(errno)")
        transport = DescriptorHCITransport(descriptor: pair[0], deviceID: deviceID)
        core = Core(descriptor: pair[1], script: script)
        TestThread.start { [core] in core.serve() }
    }

    deinit { core.close() }

    var commands: [HCICommand] { core.received.withLock { $0 } }

    func update(_ body: (inout Script) -> Void) { core.script.withLock { body(&$0) } }

    /// Writes one HCI event (without the H4 byte) to the backend.
    func inject(_ event: [UInt8]) { injectRaw([HCIRawSocket.eventPacket] + event) }

    /// Writes one packet exactly as given; false when the backend's end is closed.
    @discardableResult
    func injectRaw(_ packet: [UInt8]) -> Bool { core.inject(packet) }

    /// The adapter goes away: the backend's reads return 0.
    func close() { core.close() }

    /// Waits until at least `count` commands arrived.
    func waitForCommands(_ count: Int, within seconds: Double = 5) async -> Bool {
        await waitUntil(within: seconds) { commands.count >= count }
    }

    /// The controller's end and its thread's state; the thread keeps it alive until the
    /// socketpair is shut down or the backend closes its end.
    private final class Core: Sendable {
        let descriptor: Int32
        let script: Mutex<Script>
        let received = Mutex<[HCICommand]>([])
        init(descriptor: Int32, script: Script) {
            self.descriptor = descriptor
            self.script = Mutex(script)
        }

        deinit { Glibc.close(descriptor) }

        /// False when the packet could not be written (the backend closed its end).
        @discardableResult
        func inject(_ packet: [UInt8]) -> Bool {
            let written = packet.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            return written == packet.count
        }

        func close() { shutdown(descriptor, Int32(SHUT_RDWR)) }

        func serve() {
            var buffer = [UInt8](repeating: 0, count: 512)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if count < 0, errno == EINTR { continue }
                guard count >= 4, buffer[0] == HCICommand.packetType else { return }
                let opcode = UInt16(buffer[1]) | UInt16(buffer[2]) << 8
                let command = HCICommand(opcode: opcode, parameters: Array(buffer[4..<count]))
                received.withLock { $0.append(command) }
                let script = script.withLock { $0 }
                guard let status = script.status(command) else { continue }
                if script.answerWithCommandStatus(command) {
                    inject([HCIRawSocket.eventPacket, HCIEventCode.commandStatus, 4, status, 1, buffer[1], buffer[2]])
                    continue
                }
                var returned = [status]
                if status == HCIStatus.success {
                    if opcode == HCIOpcode.leReadLocalSupportedFeatures { returned += script.leFeatures }
                    if opcode == HCIOpcode.readLocalSupportedCommands { returned += script.supportedCommands }
                }
                inject([HCIRawSocket.eventPacket, HCIEventCode.commandComplete, UInt8(3 + returned.count), 1,
                        buffer[1], buffer[2]] + returned)
            }
        }
    }

    // MARK: Events

    static func report(_ address: UInt64, rssi: Int8 = -60, data: [UInt8]) -> OwnedAdvertisingReport {
        OwnedAdvertisingReport(kind: .advNonconnInd, address: BluetoothAddress(rawValue: address), rssi: rssi, data: data)
    }

    static func legacyEvent(_ reports: [OwnedAdvertisingReport]) -> [UInt8] {
        (try? HCIEventEncoder.advertisingReport(reports)) ?? []
    }

    static func geoRacingData(zone: UInt16, sequence: UInt16) -> [UInt8] {
        GeoRacingSignal.circuit(zone: zone, mode: .safetyCar, sequence: sequence, ttl: 30).advertisingData()
    }
}

/// Hands the backend one controller per open, in order; with none queued the adapter is
/// missing (ENODEV).
final class FakeAdapter: Sendable {
    private let queue: Mutex<[FakeController]>
    /// Controllers already handed out stay alive until the adapter goes (their deinit unplugs them).
    private let handed = Mutex<[FakeController]>([])
    private let opens = Atomic<Int>(0)

    init(_ controllers: [FakeController] = []) { queue = Mutex(controllers) }

    func plugIn(_ controller: FakeController) { queue.withLock { $0.append(controller) } }

    var openCount: Int { opens.load(ordering: .relaxed) }

    var opener: HCIScannerBackend.Opener {
        { () throws(HCIScannerError) -> any HCITransport in
            self.opens.add(1, ordering: .relaxed)
            guard let controller = self.queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
                throw .noAdapter(adapter: "hci0", known: [])
            }
            self.handed.withLock { $0.append(controller) }
            return controller.transport
        }
    }
}

/// Keeps what a backend delivers.
final class RecordingSink: AdvertisementSink {
    struct Snapshot {
        var reports: [OwnedAdvertisingReport] = []
        var bootMicros: [Int64] = []
        var flushes = 0
        /// Reports received since the last flush.
        var unflushed = 0
        var states: [(ScannerStatus.State, String?)] = []
    }

    private let state = Mutex(Snapshot())

    func receive(_ report: AdvertisingReport, bootMicros: Int64) {
        let owned = report.owned()
        state.withLock {
            $0.reports.append(owned)
            $0.bootMicros.append(bootMicros)
            $0.unflushed += 1
        }
    }

    func flush() {
        state.withLock {
            $0.flushes += 1
            $0.unflushed = 0
        }
    }

    func scannerStateChanged(_ newState: ScannerStatus.State, detail: String?) {
        state.withLock { $0.states.append((newState, detail)) }
    }

    var snapshot: Snapshot { state.withLock { $0 } }
    var reports: [OwnedAdvertisingReport] { state.withLock { $0.reports } }
    var lastState: (ScannerStatus.State, String?)? { state.withLock { $0.states.last } }

    var states: [(ScannerStatus.State, String?)] { state.withLock { $0.states } }

    func waitForReports(_ count: Int, within seconds: Double = 5) async -> Bool {
        await waitUntil(within: seconds) { state.withLock { $0.reports.count >= count } }
    }

    func waitForState(_ wanted: ScannerStatus.State, after index: Int = 0, within seconds: Double = 5,
                      detail: (String) -> Bool = { _ in true }) async -> Bool {
        await waitUntil(within: seconds) {
            state.withLock { $0.states.dropFirst(index).contains { $0.0 == wanted && detail($0.1 ?? "") } }
        }
    }

    /// The async form, for tests that must not block a cooperative thread.
    func state(_ wanted: ScannerStatus.State, within seconds: Double = 5) async -> Bool {
        let deadline = MonotonicClock.micros() + Int64(seconds * 1_000_000)
        while MonotonicClock.micros() < deadline {
            if state.withLock({ $0.states.contains { $0.0 == wanted } }) { return true }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return false
    }
}

/// A transport that fails reads with EINTR and EAGAIN on a schedule, around a real one.
final class FlakyTransport: HCITransport, @unchecked Sendable {
    let inner: any HCITransport
    private var reads = 0
    private var writes = 0
    private(set) var interruptionsReturned = 0
    private(set) var spuriousWouldBlocks = 0

    init(_ inner: any HCITransport) { self.inner = inner }

    var descriptor: Int32 { inner.descriptor }
    var deviceID: UInt16? { inner.deviceID }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> HCIReadResult {
        reads += 1
        switch reads % 4 {
        case 1:
            interruptionsReturned += 1
            return .interrupted
        case 3:
            spuriousWouldBlocks += 1
            return .wouldBlock
        default:
            return inner.read(into: buffer)
        }
    }

    func write(_ packet: UnsafeRawBufferPointer) -> HCIWriteResult {
        writes += 1
        guard writes % 2 == 0 else {
            interruptionsReturned += 1
            return .interrupted
        }
        return inner.write(packet)
    }

    func close() { inner.close() }
}

/// A flag a test sets and a helper thread polls.
final class TestFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .relaxed) }
    func set() { flag.store(true, ordering: .relaxed) }
}

/// A detached thread for test helpers (a fake controller, a signal sender).
enum TestThread {
    @discardableResult
    static func start(_ body: @escaping @Sendable () -> Void) -> PosixThread? {
        try? PosixThread.start(detached: true, body)
    }
}

enum HCITestLogger {
    static var quiet: Logger {
        var logger = Logger(label: "hci-test")
        logger.logLevel = .critical
        return logger
    }
}

import BLEPayload
import BeacondCore
import Glibc
import Logging
import Synchronization

/// A scripted HCI controller on the far end of a SOCK_SEQPACKET socketpair: a thread answers
/// each command with Command Complete (or Command Status), and tests inject events. A second
/// socketpair stands for the kernel's unbound raw socket, where the real kernel sends its device
/// notices (0xFD: an adapter went down, was unregistered) instead of on the adapter's socket.
package final class FakeController: @unchecked Sendable {
    package struct Script: Sendable {
        /// LE Read Local Supported Features' 8 bytes.
        package var leFeatures = [UInt8](repeating: 0, count: 8)
        /// Read Local Supported Commands' 64 bytes.
        package var supportedCommands = [UInt8](repeating: 0, count: 64)
        /// The status to answer a command with; nil: never answer.
        package var status: @Sendable (HCICommand) -> UInt8? = { _ in HCIStatus.success }
        /// Answer with Command Status instead of Command Complete.
        package var answerWithCommandStatus: @Sendable (HCICommand) -> Bool = { _ in false }

        package init() {}

        package static let legacy = Script()

        /// LE feature bit 12 and supported-commands octet 37 bits 5 and 6.
        package static var extended: Script {
            var script = Script()
            script.leFeatures[1] = 0x10
            script.supportedCommands[37] = 0x60
            return script
        }
    }

    /// The backend's end.
    package let transport: DescriptorHCITransport
    private let core: Core
    /// The kernel's end of the device notices' socketpair.
    private let deviceEvents: Int32

    package init(_ script: Script = .legacy, deviceID: UInt16? = nil) {
        var pair: [Int32] = [-1, -1]
        var events: [Int32] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        precondition(socketpair(AF_UNIX, type, 0, &pair) == 0, "socketpair: \(errno)")
        precondition(socketpair(AF_UNIX, type, 0, &events) == 0, "socketpair: \(errno)")
        transport = DescriptorHCITransport(descriptor: pair[0], deviceID: deviceID, deviceEventDescriptor: events[0])
        deviceEvents = events[1]
        core = Core(descriptor: pair[1], script: script)
        TestThread.start { [core] in core.serve() }
    }

    deinit {
        core.close()
        Glibc.close(deviceEvents)
    }

    /// The kernel's notice on the unbound socket that adapter `device` went down (4) or was
    /// unregistered (2): `[0xFD][6][0x0001][event][device]`, little-endian.
    package func injectDeviceEvent(_ event: UInt16, device: UInt16) {
        let packet: [UInt8] = [
            HCIRawSocket.eventPacket, 0xFD, 6, 0x01, 0x00, UInt8(event & 0xFF), UInt8(event >> 8),
            UInt8(device & 0xFF), UInt8(device >> 8),
        ]
        _ = packet.withUnsafeBytes { send(deviceEvents, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    package var commands: [HCICommand] { core.received.withLock { $0 } }

    package func update(_ body: (inout Script) -> Void) { core.script.withLock { body(&$0) } }

    /// Writes one HCI event (without the H4 byte) to the backend.
    package func inject(_ event: [UInt8]) { injectRaw([HCIRawSocket.eventPacket] + event) }

    /// Writes one packet exactly as given; false when the backend's end is closed.
    @discardableResult
    package func injectRaw(_ packet: [UInt8]) -> Bool { core.inject(packet) }

    /// The adapter goes away: the backend's reads return 0.
    package func close() { core.close() }

    /// Waits until at least `count` commands arrived.
    package func waitForCommands(_ count: Int, within seconds: Double = 5) async -> Bool {
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
                inject(
                    [
                        HCIRawSocket.eventPacket, HCIEventCode.commandComplete, UInt8(3 + returned.count), 1,
                        buffer[1], buffer[2],
                    ] + returned)
            }
        }
    }

    // MARK: Events

    package static func report(_ address: UInt64, rssi: Int8 = -60, data: [UInt8]) -> OwnedAdvertisingReport {
        OwnedAdvertisingReport(
            kind: .advNonconnInd, address: BluetoothAddress(rawValue: address), rssi: rssi,
            data: data)
    }

    package static func legacyEvent(_ reports: [OwnedAdvertisingReport]) -> [UInt8] {
        (try? HCIEventEncoder.advertisingReport(reports)) ?? []
    }

    package static func geoRacingData(zone: UInt16, sequence: UInt16) -> [UInt8] {
        GeoRacingSignal.circuit(zone: zone, mode: .safetyCar, sequence: sequence, ttl: 30).advertisingData()
    }
}

/// Hands the backend one controller per open, in order; with none queued the adapter is
/// missing (ENODEV).
package final class FakeAdapter: Sendable {
    private let queue: Mutex<[FakeController]>
    /// Controllers already handed out stay alive until the adapter goes (their deinit unplugs them).
    private let handed = Mutex<[FakeController]>([])
    private let opens = Atomic<Int>(0)

    package init(_ controllers: [FakeController] = []) { queue = Mutex(controllers) }

    package func plugIn(_ controller: FakeController) { queue.withLock { $0.append(controller) } }

    package var openCount: Int { opens.load(ordering: .relaxed) }

    package var opener: HCIScannerBackend.Opener {
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

/// A transport that fails reads with EINTR and EAGAIN on a schedule, around a real one.
package final class FlakyTransport: HCITransport, @unchecked Sendable {
    package let inner: any HCITransport
    private var reads = 0
    private var writes = 0
    package private(set) var interruptionsReturned = 0
    package private(set) var spuriousWouldBlocks = 0

    package init(_ inner: any HCITransport) { self.inner = inner }

    package var descriptor: Int32 { inner.descriptor }
    package var deviceID: UInt16? { inner.deviceID }

    package func read(into buffer: UnsafeMutableRawBufferPointer) -> HCIReadResult {
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

    package func write(_ packet: UnsafeRawBufferPointer) -> HCIWriteResult {
        writes += 1
        guard writes % 2 == 0 else {
            interruptionsReturned += 1
            return .interrupted
        }
        return inner.write(packet)
    }

    package func close() { inner.close() }
}

/// A flag a test sets and a helper thread polls.
package final class TestFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    package init() {}
    package var isSet: Bool { flag.load(ordering: .relaxed) }
    package func set() { flag.store(true, ordering: .relaxed) }
}

/// A detached thread for test helpers (a fake controller, a signal sender).
package enum TestThread {
    @discardableResult
    package static func start(_ body: @escaping @Sendable () -> Void) -> PosixThread? {
        try? PosixThread.start(detached: true, body)
    }
}

package enum HCITestLogger {
    package static var quiet: Logger {
        var logger = Logger(label: "hci-test")
        logger.logLevel = .critical
        return logger
    }
}

import BLEPayload
import BeacondCore
import BenchmarkResults
import CircuitState
import Glibc
import Logging
import Synchronization

/// The HCI read path's throughput target (issue: "from read() to the fusion engine at least
/// 50,000 reports/s with one core at < 50 %"), measured through the real pieces: a producer
/// thread plays the controller on a SOCK_SEQPACKET socketpair (answering the setup commands,
/// then writing LE Advertising Report events), and the real `HCIScannerBackend` reader thread
/// decodes them into a `HubAdvertisementSink` feeding a real `TrackStateHub`, with a table of the
/// other devices heard, as the daemon wires it.
///
/// CPU is the reader thread's plus the hub loop thread's (CLOCK_THREAD_CPUTIME_ID of each,
/// read through pthread_getcpuclockid), as a percentage of one core over the run.
enum HCIPathBench {
    struct Phase {
        var seconds: Double
        var written: Int
        /// What the readers must read: every report, or with the kernel filter the GeoRacing half.
        var expected: Int
        var delivered: Int
        var ingested: Int
        var dropped: Int
        var readerCPU: Double
        var loopCPU: Double
        /// Read bursts that found packets: the reader's wake-ups with work.
        var bursts: Int

        var deliveredRate: Double { Double(delivered) / seconds }
        var writtenRate: Double { Double(written) / seconds }
        var cpu: Double { readerCPU + loopCPU }
        var reportsPerBurst: Double { bursts > 0 ? Double(delivered) / Double(bursts) : 0 }
    }

    struct Result {
        var rate: Int
        /// Events written in 1 ms ticks, as a USB controller's interrupt transfers deliver them.
        var paced: Phase
        /// Events written in 100 µs ticks: fewer per wakeup, more wakeups.
        var finePaced: Phase
        var unpaced: Phase
        var malformed: Int
        /// The hub verifier's counts at the end (the signed mix).
        var signatures = SignatureCounters()
        /// Copies of an advert heard by another adapter, dropped by the hub (several adapters).
        var copiesDropped = 0

        /// Every report written that the kernel filter kept was delivered, at the paced rate, within
        /// the CPU budget, in both pacings.
        var met: Bool {
            [paced, finePaced].allSatisfy {
                $0.delivered == $0.expected && $0.writtenRate >= 0.98 * Double(rate) && $0.cpu < 50
            }
        }
    }

    /// The venue key of the signed mix (key id 1).
    static let benchKeyring: VenueKeyring = {
        var keyring = VenueKeyring()
        keyring.addVenueKey([UInt8](0..<32), id: 1)
        return keyring
    }()

    /// Events the producer cycles through: half GeoRacing frames from 50 beacons, half other
    /// advertisers (an iBeacon-like frame), one report per event as controllers send them. With
    /// `signed`, the GeoRacing half is v3 frames signed now (TTL 255 s, each transmitter its own
    /// source id), each repeated as a transmitter repeats its bytes between two signings: the hub
    /// verifies each transmitter's bytes once and compares the repeats.
    static func events(signed: Bool = false) -> [[UInt8]] {
        var events: [[UInt8]] = []
        let signer = BeaconSigner(keyring: benchKeyring, sourceID: 0)
        let now = UInt32(clamping: MonotonicClock.wallMicros() / 1_000_000)
        for index in 0..<BenchPipeline.backgroundBeacons {
            var (signal, address) = BenchPipeline.backgroundSignal(index)
            if signed {
                var transmitter = signer
                transmitter.sourceID = UInt16(index)
                signal.ttl = 255
                signal = transmitter.sign(signal, mode: 0, signedAt: now) ?? signal
            }
            let beacon = OwnedAdvertisingReport(
                kind: .advNonconnInd, address: address, rssi: Int8(-60 - index % 11),
                data: signal.advertisingData())
            var other = AdvertisingDataBuilder()
            other.appendFlags(0x06)
            other.appendManufacturerData(
                companyID: 0x004C, payload: [0x02, 0x15] + [UInt8](repeating: UInt8(index), count: 21))
            let phone = OwnedAdvertisingReport(
                kind: .advInd, addressType: .randomDevice,
                address: BluetoothAddress(rawValue: 0x4A_00_00_00_00_00 + UInt64(index)),
                rssi: -85, data: other.bytes)
            for report in [beacon, phone] {
                if let event = try? HCIEventEncoder.advertisingReport([report]) {
                    events.append(HCIEventEncoder.h4(event))
                }
            }
        }
        return events
    }

    /// `adapters`: how many adapters hear every event, each with its own socketpair, controller,
    /// reader thread and sink, the hub counting each advert once (`AdapterCopyFilter`), as the
    /// daemon wires `scanner.adapter: [hci0, hci1]`. CPU is every reader's plus the hub loop's.
    /// `kernelFilter`: each reader's socket carries the daemon's kernel filter (the default,
    /// `scanner.kernel_filter: true`); the kernel runs it in the writer's `send`, as it runs it in
    /// its own receive work for a raw HCI socket, so neither counts in the daemon's CPU.
    static func run(
        rate: Int, seconds: Double, unpacedSeconds: Double = 3, signed: Bool = false, adapters: Int = 1,
        kernelFilter: Bool = true, burstPause: Int64 = HCIScannerConfiguration().burstPause
    ) throws -> Result {
        let pipeline = try BenchPipeline(copyFilter: adapters > 1 ? AdapterCopyFilter() : nil)
        defer { pipeline.close() }
        _ = try pipeline.warmUp()
        if signed {
            let hub = pipeline.hub
            try pipeline.onLoop {
                hub.setVerification(
                    authenticator: VenueAuthenticator(
                        keyring: benchKeyring, companyID: GeoRacingSignal.defaultCompanyID),
                    clockWindow: 3_600_000_000)
            }
        }
        let demand = AllDevicesDemand()
        let devices = NearbyDeviceTable(demand: kernelFilter ? demand : nil)
        let filter = kernelFilter ? HCIKernelFilter(companyID: GeoRacingSignal.defaultCompanyID, demand: demand) : nil
        let events = events(signed: signed)
        // Which events the filter keeps: the GeoRacing ones (the bench's other devices send none).
        let kept = events.map { event in
            !kernelFilter
                || event.withUnsafeBytes { bytes in
                    var decoder = HCIEventDecoder()
                    var geoRacing = false
                    _ = decoder.decode(event: UnsafeRawBufferPointer(rebasing: bytes[1...]), timestamp: 0) { report in
                        if case .none = GeoRacingDecoder().decode(report.data) {} else { geoRacing = true }
                    }
                    return geoRacing
                }
        }
        var readers: [BenchReader] = []
        defer { for reader in readers { reader.stop() } }
        for index in 0..<max(1, adapters) {
            let tag =
                adapters > 1 ? ScannerAdapterTag(name: "hci\(index)", index: UInt16(index), filtersCopies: true) : nil
            let sink = HubAdvertisementSink(
                hub: pipeline.hub, decoder: GeoRacingDecoder(), devices: devices, adapter: tag)
            readers.append(
                try BenchReader(sink: sink, events: events, kept: kept, kernelFilter: filter, burstPause: burstPause))
        }
        let loopClock = try pipeline.onLoop { () -> clockid_t in
            var clock = clockid_t()
            pthread_getcpuclockid(pthread_self(), &clock)
            return clock
        }
        let controllers = readers.map(\.controller)

        func phase(_ produce: () -> (written: Int, expected: Int)) throws -> Phase {
            let reportsBefore = readers.map(\.sink.counters.reports).reduce(0, +)
            let droppedBefore = readers.map(\.sink.counters.droppedSignals).reduce(0, +)
            let signalsBefore = try pipeline.figures().signals
            let burstsBefore = readers.map { $0.backend.counters.snapshot.bursts }.reduce(0, +)
            let readersBefore = readers.map { Self.cpuNanos($0.clock) }.reduce(0, +)
            let loopBefore = Self.cpuNanos(loopClock)
            let start = BenchClock.nanos()
            let (writtenEach, expectedEach) = produce()
            let (written, expected) = (writtenEach * readers.count, expectedEach * readers.count)
            let deadline = BenchClock.nanos() + 3_000_000_000
            while readers.map(\.sink.counters.reports).reduce(0, +) - reportsBefore < expected,
                BenchClock.nanos() < deadline
            {
                BenchClock.sleep(seconds: 0.0005)
            }
            // Everything handed to the loop has been ingested once this round trip returns.
            let signalsAfter = try pipeline.figures().signals
            let elapsed = Double(BenchClock.nanos() - start) / 1e9
            return Phase(
                seconds: elapsed, written: written, expected: expected,
                delivered: readers.map(\.sink.counters.reports).reduce(0, +) - reportsBefore,
                ingested: signalsAfter - signalsBefore,
                dropped: readers.map(\.sink.counters.droppedSignals).reduce(0, +) - droppedBefore,
                readerCPU: Double(readers.map { Self.cpuNanos($0.clock) }.reduce(0, +) - readersBefore) / 1e9 / elapsed
                    * 100,
                loopCPU: Double(Self.cpuNanos(loopClock) - loopBefore) / 1e9 / elapsed * 100,
                bursts: readers.map { $0.backend.counters.snapshot.bursts }.reduce(0, +) - burstsBefore)
        }

        let paced = try phase { BenchController.produce(controllers, rate: rate, seconds: seconds, tick: 1_000_000) }
        let finePaced = try phase { BenchController.produce(controllers, rate: rate, seconds: seconds, tick: 100_000) }
        let unpaced = try phase { BenchController.produce(controllers, rate: nil, seconds: unpacedSeconds, tick: 0) }
        let hub = pipeline.hub
        return Result(
            rate: rate, paced: paced, finePaced: finePaced, unpaced: unpaced,
            malformed: readers.map { $0.backend.counters.snapshot.malformed }.reduce(0, +),
            signatures: try pipeline.onLoop { hub.signatureCounters },
            copiesDropped: try pipeline.onLoop { Int(clamping: hub.copyCounters?.dropped ?? 0) })
    }

    /// A thread's CPU time, ns, from its clock (pthread_getcpuclockid).
    static func cpuNanos(_ clock: clockid_t) -> Int64 {
        var spec = timespec()
        clock_gettime(clock, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}

/// One adapter of the benchmark: a socketpair, its controller end, and the real backend reading
/// the other end into `sink`, started and scanning.
private final class BenchReader {
    let sink: HubAdvertisementSink
    let controller: BenchController
    let backend: HCIScannerBackend
    let clock: clockid_t
    /// Set by the reader thread as it ends.
    private let finished = EndFlag()

    private final class EndFlag: Sendable {
        let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .acquiring) }
        func set() { value.store(true, ordering: .releasing) }
    }

    init(
        sink: HubAdvertisementSink, events: [[UInt8]], kept: [Bool], kernelFilter: HCIKernelFilter?,
        burstPause: Int64
    ) throws {
        self.sink = sink
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw BenchFailure("socketpair: \(errnoText(errno))")
        }
        controller = BenchController(descriptor: pair[1], events: events, kept: kept)
        let backendEnd = pair[0]
        let handed = Atomic<Bool>(false)
        var configuration = HCIScannerConfiguration(silenceRestart: 0, retriesMissingAdapter: false)
        configuration.commandTimeout = 2_000_000
        configuration.burstPause = burstPause
        backend = try HCIScannerBackend(
            configuration: configuration, sink: sink, kernelFilter: kernelFilter,
            logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }),
            opener: { () throws(HCIScannerError) -> any HCITransport in
                guard !handed.exchange(true, ordering: .relaxed) else { throw .noAdapter(adapter: "bench", known: []) }
                let transport = DescriptorHCITransport(descriptor: backendEnd)
                return BenchPipeline.baseline ? PerPacketTransport(transport) : transport
            })
        let failure = Mutex<HCIScannerError?>(nil)
        backend.start { [finished] error in
            failure.withLock { $0 = error }
            finished.set()
        }
        let startDeadline = BenchClock.nanos() + 5_000_000_000
        while backend.mode == nil, !finished.isSet, BenchClock.nanos() < startDeadline {
            BenchClock.sleep(seconds: 0.001)
        }
        var readerClock = clockid_t()
        if backend.mode != nil, let reader = backend.readerThread { pthread_getcpuclockid(reader, &readerClock) }
        clock = readerClock
        guard backend.mode != nil, backend.readerThread != nil else {
            stop()
            throw BenchFailure(
                "the backend did not start scanning: \(failure.withLock { $0.map { "\($0)" } } ?? "no answer")")
        }
    }

    func stop() {
        backend.stop()
        while !finished.isSet { BenchClock.sleep(seconds: 0.001) }
        controller.close()
    }
}

/// The controller end of the benchmark's socketpair: a thread answers every command (no
/// extended scanning, status success), and `produce` writes events from the calling thread.
private final class BenchController: @unchecked Sendable {
    let descriptor: Int32
    let events: [[UInt8]]
    /// Whether the reader's kernel filter keeps each event.
    let kept: [Bool]
    private let responder = Atomic<Bool>(true)
    private var thread: PosixThread?

    init(descriptor: Int32, events: [[UInt8]], kept: [Bool]) {
        self.descriptor = descriptor
        self.events = events
        self.kept = kept
        thread = BenchThread.start { [self] in answerCommands() }
    }

    /// Writes each event to every controller in turn (every adapter hears every advert), at
    /// `rate` per second (nil: as fast as the readers take them) for `seconds`, the ones due every
    /// `tick` ns at once; returns how many events each controller wrote, and how many of them its
    /// reader's filter keeps.
    static func produce(
        _ controllers: [BenchController], rate: Int?, seconds: Double, tick: Int64
    ) -> (written: Int, expected: Int) {
        guard let first = controllers.first else { return (0, 0) }
        let start = BenchClock.nanos()
        let end = start + Int64(seconds * 1e9)
        var written = 0
        var expected = 0
        var index = 0
        while true {
            let now = BenchClock.nanos()
            if now >= end { break }
            let due = rate.map { Int(Double(now - start) / 1e9 * Double($0)) } ?? written + 256
            while written < due {
                let event = first.events[index]
                let keeps = first.kept[index]
                index = index + 1 == first.events.count ? 0 : index + 1
                for controller in controllers {
                    let count = event.withUnsafeBytes {
                        send(controller.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                    }
                    guard count == event.count else { return (written, expected) }
                }
                written += 1
                if keeps { expected += 1 }
            }
            if rate != nil { BenchClock.sleep(until: min(end, BenchClock.nanos() + tick)) }
        }
        return (written, expected)
    }

    func close() {
        responder.store(false, ordering: .relaxed)
        shutdown(descriptor, Int32(SHUT_RDWR))
        thread?.join()
        Glibc.close(descriptor)
    }

    private func answerCommands() {
        var buffer = [UInt8](repeating: 0, count: 300)
        while responder.load(ordering: .relaxed) {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count >= 4, buffer[0] == HCICommand.packetType else { return }
            let opcode = UInt16(buffer[1]) | UInt16(buffer[2]) << 8
            var returned: [UInt8] = [HCIStatus.success]
            if opcode == HCIOpcode.leReadLocalSupportedFeatures { returned += [UInt8](repeating: 0, count: 8) }
            if opcode == HCIOpcode.readLocalSupportedCommands { returned += [UInt8](repeating: 0, count: 64) }
            let answer =
                [
                    HCIRawSocket.eventPacket, HCIEventCode.commandComplete, UInt8(3 + returned.count), 1,
                    buffer[1], buffer[2],
                ] + returned
            _ = answer.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
    }
}

/// `--baseline`: the transport read one packet per `read(2)`, as before issue 15 (it does not
/// implement `readBatch`, so the protocol's one-packet default is used).
private final class PerPacketTransport: HCITransport {
    let inner: DescriptorHCITransport
    init(_ inner: DescriptorHCITransport) { self.inner = inner }
    var descriptor: Int32 { inner.descriptor }
    var deviceID: UInt16? { inner.deviceID }
    func read(into buffer: UnsafeMutableRawBufferPointer) -> HCIReadResult { inner.read(into: buffer) }
    func write(_ packet: UnsafeRawBufferPointer) -> HCIWriteResult { inner.write(packet) }
    func close() { inner.close() }
}

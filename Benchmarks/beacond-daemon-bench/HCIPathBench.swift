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
        var delivered: Int
        var ingested: Int
        var dropped: Int
        var readerCPU: Double
        var loopCPU: Double
        /// Read bursts that found packets: the reader's wake-ups with work.
        var bursts: Int

        var deliveredRate: Double { Double(delivered) / seconds }
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

        /// Every report written was delivered at the paced rate, within the CPU budget, in both pacings.
        var met: Bool {
            [paced, finePaced].allSatisfy {
                $0.delivered == $0.written && $0.deliveredRate >= 0.98 * Double(rate) && $0.cpu < 50
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

    static func run(rate: Int, seconds: Double, unpacedSeconds: Double = 3, signed: Bool = false) throws -> Result {
        let pipeline = try BenchPipeline()
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
        let sink = HubAdvertisementSink(hub: pipeline.hub, decoder: GeoRacingDecoder(), devices: NearbyDeviceTable())

        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw BenchFailure("socketpair: \(errnoText(errno))")
        }
        let controller = BenchController(descriptor: pair[1], events: events(signed: signed))
        defer { controller.close() }
        let backendEnd = pair[0]
        let handed = Atomic<Bool>(false)
        var configuration = HCIScannerConfiguration(silenceRestart: 0, retriesMissingAdapter: false)
        configuration.commandTimeout = 2_000_000
        let backend = try HCIScannerBackend(
            configuration: configuration, sink: sink,
            logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }),
            opener: { () throws(HCIScannerError) -> any HCITransport in
                guard !handed.exchange(true, ordering: .relaxed) else { throw .noAdapter(adapter: "bench", known: []) }
                let transport = DescriptorHCITransport(descriptor: backendEnd)
                return BenchPipeline.baseline ? PerPacketTransport(transport) : transport
            })
        let finished = Atomic<Bool>(false)
        let failure = Mutex<HCIScannerError?>(nil)
        backend.start { error in
            failure.withLock { $0 = error }
            finished.store(true, ordering: .releasing)
        }
        defer {
            backend.stop()
            while !finished.load(ordering: .acquiring) { BenchClock.sleep(seconds: 0.001) }
        }
        let startDeadline = BenchClock.nanos() + 5_000_000_000
        while backend.mode == nil, !finished.load(ordering: .acquiring), BenchClock.nanos() < startDeadline {
            BenchClock.sleep(seconds: 0.001)
        }
        guard backend.mode != nil else {
            throw BenchFailure(
                "the backend did not start scanning: \(failure.withLock { $0.map { "\($0)" } } ?? "no answer")")
        }
        guard let reader = backend.readerThread else { throw BenchFailure("no reader thread") }
        var readerClock = clockid_t()
        guard pthread_getcpuclockid(reader, &readerClock) == 0 else { throw BenchFailure("no reader CPU clock") }
        let loopClock = try pipeline.onLoop { () -> clockid_t in
            var clock = clockid_t()
            pthread_getcpuclockid(pthread_self(), &clock)
            return clock
        }

        func phase(_ produce: () -> Int) throws -> Phase {
            let reportsBefore = sink.counters.reports
            let droppedBefore = sink.counters.droppedSignals
            let signalsBefore = try pipeline.figures().signals
            let burstsBefore = backend.counters.snapshot.bursts
            let readerBefore = Self.cpuNanos(readerClock)
            let loopBefore = Self.cpuNanos(loopClock)
            let start = BenchClock.nanos()
            let written = produce()
            let deadline = BenchClock.nanos() + 3_000_000_000
            while sink.counters.reports - reportsBefore < written, BenchClock.nanos() < deadline {
                BenchClock.sleep(seconds: 0.0005)
            }
            // Everything handed to the loop has been ingested once this round trip returns.
            let signalsAfter = try pipeline.figures().signals
            let elapsed = Double(BenchClock.nanos() - start) / 1e9
            return Phase(
                seconds: elapsed, written: written, delivered: sink.counters.reports - reportsBefore,
                ingested: signalsAfter - signalsBefore, dropped: sink.counters.droppedSignals - droppedBefore,
                readerCPU: Double(Self.cpuNanos(readerClock) - readerBefore) / 1e9 / elapsed * 100,
                loopCPU: Double(Self.cpuNanos(loopClock) - loopBefore) / 1e9 / elapsed * 100,
                bursts: backend.counters.snapshot.bursts - burstsBefore)
        }

        let paced = try phase { controller.produce(rate: rate, seconds: seconds, tick: 1_000_000) }
        let finePaced = try phase { controller.produce(rate: rate, seconds: seconds, tick: 100_000) }
        let unpaced = try phase { controller.produce(rate: nil, seconds: unpacedSeconds, tick: 0) }
        let hub = pipeline.hub
        return Result(
            rate: rate, paced: paced, finePaced: finePaced, unpaced: unpaced,
            malformed: backend.counters.snapshot.malformed, signatures: try pipeline.onLoop { hub.signatureCounters })
    }

    private static func cpuNanos(_ clock: clockid_t) -> Int64 {
        var spec = timespec()
        clock_gettime(clock, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}

/// The controller end of the benchmark's socketpair: a thread answers every command (no
/// extended scanning, status success), and `produce` writes events from the calling thread.
private final class BenchController: @unchecked Sendable {
    private let descriptor: Int32
    private let events: [[UInt8]]
    private let responder = Atomic<Bool>(true)
    private var thread: PosixThread?

    init(descriptor: Int32, events: [[UInt8]]) {
        self.descriptor = descriptor
        self.events = events
        thread = BenchThread.start { [self] in answerCommands() }
    }

    /// Writes events at `rate` per second (nil: as fast as the reader takes them) for `seconds`,
    /// the ones due every `tick` ns at once; returns how many reports were written.
    func produce(rate: Int?, seconds: Double, tick: Int64) -> Int {
        let start = BenchClock.nanos()
        let end = start + Int64(seconds * 1e9)
        var written = 0
        var index = 0
        while true {
            let now = BenchClock.nanos()
            if now >= end { break }
            let due = rate.map { Int(Double(now - start) / 1e9 * Double($0)) } ?? written + 256
            while written < due {
                let event = events[index]
                index = index + 1 == events.count ? 0 : index + 1
                let count = event.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard count == event.count else { return written }
                written += 1
            }
            if rate != nil { BenchClock.sleep(until: min(end, BenchClock.nanos() + tick)) }
        }
        return written
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

extension BenchDaemonCommand {
    /// The same path with the GeoRacing half as signed v3 frames, verified by the hub: the cost of
    /// verification per report, as a ratio to the v1 run just measured (issue 29).
    func signedHCIPath(reference: HCIPathBench.Result, figures: inout BenchmarkResults) throws {
        let signed = try HCIPathBench.run(rate: reference.rate, seconds: duration, signed: true)
        let (v1, v3) = (reference.paced, signed.paced)
        let ratio = v1.cpu > 0 ? v3.cpu / v1.cpu : 0
        let extraNanos = v1.delivered > 0 ? (v3.cpu - v1.cpu) / 100 * 1e9 / v1.deliveredRate : 0
        print(
            """
            hci path  signed v3 mix (half v3 from 50 transmitters, each verified once, the repeats compared; half \
            other devices), paced 1 ms: \(v3.delivered) of \(v3.written) delivered, \(v3.ingested) signals; over \
            all phases \(signed.signatures.accepted) v3 accepted, \(signed.signatures.tagsComputed) tags computed, \
            \(signed.signatures.rejected.values.reduce(0, +)) rejected; CPU \
            \(String(format: "%.1f", v3.cpu)) % against \(String(format: "%.1f", v1.cpu)) % for v1: \
            ×\(String(format: "%.2f", ratio)), \(String(format: "%+.0f", extraNanos)) ns per report
            """
        )
        figures.record("hci.signed.paced.cpu", v3.cpu, unit: "%")
        figures.record("hci.signed.cpu_ratio_to_v1", ratio, unit: "x")
        figures.record("hci.signed.delivered_rate", v3.deliveredRate, unit: "reports/s")
    }
}

import BLEPayload
import Logging
import ServiceLifecycle
import Synchronization

/// The daemon's live scanner: one backend per adapter (`scanner.adapter`), each on its own thread
/// with its own sink, all feeding one hub (docs/hci-backend.md, "Several adapters").
///
/// The adapters never wait for each other: each backend retries its own adapter, and one that
/// fails for good (no permission, say) reports its adapter down with the reason and ends while
/// the others run on. The set ends with an error only when every adapter has failed so, as the
/// one backend of a single adapter always did; it ends without one at a graceful shutdown.
///
/// With `auto`, an `AdapterDiscovery` hands it each adapter the kernel has, and any that appears
/// later; each becomes one more member, up to `ScannerAdapters.maxCount`.
package final class ScannerSet: Service, Sendable {
    package struct Member: Sendable {
        package let tag: ScannerAdapterTag
        package let sink: HubAdvertisementSink
        package let backend: any Service

        package init(tag: ScannerAdapterTag, sink: HubAdvertisementSink, backend: any Service) {
            self.tag = tag
            self.sink = sink
            self.backend = backend
        }
    }

    /// Builds the member for an adapter `discovery` found: its name and index.
    package typealias MemberFactory = @Sendable (_ name: String, _ index: UInt16) throws -> Member

    private struct Roster {
        var members: [Member] = []
        /// Members whose backend ended with an error, and whether the set ends with it.
        var failures: [any Error] = []
    }

    private let roster: Mutex<Roster>
    private let hub: TrackStateHub
    private let discovery: AdapterDiscovery?
    private let makeMember: MemberFactory?
    private let logger: Logger

    package init(
        members: [Member], hub: TrackStateHub, discovery: AdapterDiscovery? = nil, makeMember: MemberFactory? = nil,
        logger: Logger = Logger(label: "beacond.scanner")
    ) {
        roster = Mutex(Roster(members: members))
        self.hub = hub
        self.discovery = discovery
        self.makeMember = makeMember
        self.logger = logger
    }

    /// The backends a configuration names, one per adapter, feeding `hub`; with `auto`, none yet
    /// and a discovery that adds them. The HCI backends share one kernel filter when `devices`
    /// has a demand to lift it (the daemon gives it one when the filter applies).
    package static func make(
        _ scanner: DaemonConfiguration.Scanner, record: DaemonConfiguration.Record, hub: TrackStateHub,
        decoder: GeoRacingDecoder, devices: NearbyDeviceTable?, logger: Logger,
        logLimiter: LogRateLimiter = LogRateLimiter()
    ) throws -> ScannerSet {
        let filtersCopies = scanner.adapters.filtersCopies
        let kernelFilter = devices?.demand.map { HCIKernelFilter(companyID: scanner.companyID, demand: $0) }
        let makeMember: MemberFactory = { name, index in
            let tag = ScannerAdapterTag(name: name, index: index, filtersCopies: filtersCopies)
            let sink = HubAdvertisementSink(hub: hub, decoder: decoder, devices: devices, adapter: tag)
            let backend = try LiveScanner.make(
                scanner, adapter: name, record: record, sink: sink, retriesMissingAdapter: true,
                kernelFilter: kernelFilter, logger: logger, logLimiter: logLimiter)
            return Member(tag: tag, sink: sink, backend: backend)
        }
        let members = try scanner.adapters.names.enumerated().map { try makeMember($1, UInt16($0)) }
        guard scanner.adapters == .auto else { return ScannerSet(members: members, hub: hub, logger: logger) }
        let discovery: AdapterDiscovery
        do {
            discovery = try AdapterDiscovery()
        } catch {
            throw DaemonStartError(
                description: "cannot create the adapter discovery's eventfd: \(errnoText(error.errno))")
        }
        return ScannerSet(members: members, hub: hub, discovery: discovery, makeMember: makeMember, logger: logger)
    }

    /// The members so far, in order.
    package var members: [Member] { roster.withLock { $0.members } }

    package func run() async throws {
        try await withThrowingDiscardingTaskGroup { group in
            for member in members { group.addTask { try await self.run(member) } }
            guard let discovery, let makeMember else { return }
            if members.isEmpty {
                hub.eventLoop.execute { [hub] in
                    hub.setScanner(.down, detail: "no Bluetooth adapter found yet (scanner.adapter: auto)")
                }
            }
            let (found, continuation) = AsyncStream.makeStream(of: String.self)
            group.addTask {
                defer { continuation.finish() }
                try await discovery.run { continuation.yield($0) }
            }
            for await name in found {
                let index = UInt16(members.count)
                do {
                    let member = try makeMember(name, index)
                    roster.withLock { $0.members.append(member) }
                    logger.info("scanner: adapter \(name) found; scanning it too")
                    group.addTask { try await self.run(member) }
                } catch {
                    logger.error("scanner: adapter \(name) found, but cannot scan it: \(error)")
                }
            }
        }
        let (failures, count) = roster.withLock { ($0.failures, $0.members.count) }
        if count > 0, failures.count == count, let first = failures.first { throw first }
    }

    /// Runs one member's backend; its failure is recorded, never the others' end, unless every
    /// member has now failed: then the discovery stops, so the set can end with the error.
    private func run(_ member: Member) async throws {
        do {
            try await member.backend.run()
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            let everyOneFailed = roster.withLock { roster in
                roster.failures.append(error)
                return roster.failures.count == roster.members.count
            }
            if everyOneFailed { discovery?.stop() }
        }
    }
}

extension ScannerSet: StatusContributor {
    /// `scan` and `hci` (or `bluez`) summed over the adapters, and each adapter's counters in
    /// `scanner.adapters`. With one adapter, `hci` is its backend's, recording included.
    package func contribute(to status: inout StatusMessage, for query: StatusQuery) {
        var scan = ScanStatus(reports: 0, droppedSignals: 0)
        var hciTotal: HCIBackendStatus?
        var bluezTotal: BlueZStatus?
        for member in members {
            let counters = member.sink.counters
            scan.reports += counters.reports
            scan.droppedSignals += counters.droppedSignals
            var restarts: Int?
            var reconnects: Int?
            if let hci = member.backend as? HCIScannerBackend {
                let one = hci.hciStatus
                restarts = one.restarts
                reconnects = one.reconnects
                hciTotal = hciTotal.map { $0.adding(one) } ?? one
            } else if let bluez = member.backend as? BlueZScannerBackend {
                let one = bluez.counters.status
                bluezTotal = bluezTotal.map { $0.adding(one) } ?? one
            }
            if let index = status.scanner.adapters.firstIndex(where: { $0.name == member.tag.name }) {
                status.scanner.adapters[index].reports = counters.reports
                status.scanner.adapters[index].restarts = restarts ?? 0
                status.scanner.adapters[index].reconnects = reconnects ?? 0
            }
        }
        if let copies = hub.copyCounters {
            scan.copies = CopyFilterStatus(
                passed: Int(clamping: copies.passed), dropped: Int(clamping: copies.dropped),
                handovers: Int(clamping: copies.handovers), evictions: Int(clamping: copies.evictions))
        }
        status.scan = scan
        if let hciTotal { status.hci = hciTotal }
        if let bluezTotal { status.bluez = bluezTotal }
    }
}

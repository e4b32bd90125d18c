import BLEPayload
import CLinux
import Glibc
import Synchronization

/// The daemon's kernel filter for its HCI scanners (`scanner.kernel_filter`): the compiled
/// `HCIReportFilter` program, and the demand that lifts it while a client looks at every device.
package final class HCIKernelFilter: Sendable {
    /// How long the silence watchdog lifts the filter to hear whether any device at all is on the
    /// air before it restarts a scan that read no GeoRacing report for `silence_restart_s`.
    package static let probeDuration: Int64 = 2_000_000

    let program: [sock_filter]
    package let demand: AllDevicesDemand
    let probeDuration: Int64

    package init(
        companyID: UInt16, demand: AllDevicesDemand, probeDuration: Int64 = HCIKernelFilter.probeDuration
    ) {
        program = HCIReportFilter.program(companyID: companyID).map {
            sock_filter(code: $0.code, jt: $0.jumpIfTrue, jf: $0.jumpIfFalse, k: $0.k)
        }
        self.demand = demand
        self.probeDuration = max(0, probeDuration)
    }

    /// Attaches the program to `descriptor`: 0, or the errno.
    func attach(to descriptor: Int32) -> Int32 {
        let result = program.withUnsafeBufferPointer {
            beacond_attach_socket_filter(descriptor, $0.baseAddress, UInt16(clamping: $0.count))
        }
        return result == 0 ? 0 : errno
    }

    /// Detaches whatever filter `descriptor` has: 0, or the errno (ENOENT: none was attached).
    static func detach(from descriptor: Int32) -> Int32 {
        beacond_detach_socket_filter(descriptor) == 0 ? 0 : errno
    }
}

/// What one scanner's kernel filter is doing, for `status.hci.kernel_filter`.
package enum HCIKernelFilterState: UInt8, Sendable {
    /// Dropping the reports that carry no GeoRacing frame.
    case on
    /// Lifted: a client looks at every device.
    case lifted
    /// Lifted by the silence watchdog, to hear whether any device is on the air.
    case probing
    /// Not used: `scanner.kernel_filter: false`, recording, or not connected.
    case off
    /// The kernel refused it; the scanner reads every report.
    case failed

    package var name: String {
        switch self {
        case .on: "on"
        case .lifted: "lifted"
        case .probing: "probing"
        case .off: "off"
        case .failed: "failed"
        }
    }
}

/// One scanner's kernel filter counters, shared with status readers.
package final class HCIKernelFilterCounters: Sendable {
    let state = Atomic<UInt8>(HCIKernelFilterState.off.rawValue)
    /// Times the silence watchdog lifted the filter to listen for any device.
    let probes = Atomic<Int>(0)
    /// Times a client's look lifted it.
    let lifts = Atomic<Int>(0)
    private let lastFailure = Mutex<String?>(nil)

    package var current: HCIKernelFilterState {
        HCIKernelFilterState(rawValue: state.load(ordering: .relaxed)) ?? .off
    }

    var failure: String? { lastFailure.withLock { $0 } }

    func set(_ new: HCIKernelFilterState) { state.store(new.rawValue, ordering: .relaxed) }

    func failed(_ reason: String) {
        lastFailure.withLock { $0 = reason }
        set(.failed)
    }
}

/// A scanner's use of the kernel filter on one connection, on its reader thread: attaches and
/// detaches the filter as the clients' looks, the silence probe and the recorder say.
struct HCIKernelFilterSwitch {
    let filter: HCIKernelFilter?
    let counters: HCIKernelFilterCounters
    /// Recording keeps every report: a capture is for looking at everything later.
    let recording: Bool
    private var attached = false
    private var refused = false
    /// The probe under way: when it began and when it ends.
    private(set) var probe: (start: Int64, end: Int64)?

    init(filter: HCIKernelFilter?, counters: HCIKernelFilterCounters, recording: Bool) {
        self.filter = filter
        self.counters = counters
        self.recording = recording
    }

    /// Attaches or detaches the filter on `transport` as things stand at `now` (CLOCK_BOOTTIME
    /// µs). A refusal is logged by the caller from the returned reason, once per connection.
    mutating func update(on transport: any HCITransport, at now: Int64) -> String? {
        guard let filter, !recording, !refused else {
            if !refused { counters.set(.off) }
            return nil
        }
        let looked = filter.demand.isActive(at: now)
        let wanted = !looked && probe == nil
        if wanted != attached {
            let code = wanted ? transport.attachReportFilter(filter) : transport.detachReportFilter()
            if code != 0, code != ENOENT {
                refused = true
                attached = false
                let reason =
                    "the kernel refused to \(wanted ? "attach" : "detach") the report filter: \(errnoText(code))"
                counters.failed(reason)
                return reason
            }
            attached = wanted
            if !wanted, looked { counters.lifts.add(1, ordering: .relaxed) }
        }
        counters.set(attached ? .on : looked ? .lifted : .probing)
        return nil
    }

    /// The silence watchdog found no report for its whole period at `now`. True: the filter was
    /// on, so it is lifted for a probe instead of a restart (call `update` next); false: restart.
    mutating func silenceElapsed(at now: Int64) -> Bool {
        if let probe {
            guard now >= probe.end else { return true }
            self.probe = nil
            return false
        }
        guard attached, let filter else { return false }
        probe = (now, now &+ filter.probeDuration)
        counters.probes.add(1, ordering: .relaxed)
        return true
    }

    /// A report arrived at `boot`: a probe under way has heard the air and ends.
    mutating func heard(at boot: Int64) {
        if let probe, boot >= probe.start { self.probe = nil }
    }
}

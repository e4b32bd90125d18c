/// The scanner's health as the hub keeps it: each adapter's state as its backend last reported
/// it, and the state of the whole (docs/protocol.md, "scanner").
///
/// The whole is `up` while every adapter scans, `degraded` while some do and some do not, `down`
/// while none does, and `none` once all have stopped. An adapter that scanned and lost it is
/// `recovering` rather than `down`. A backend without adapters (replay) sets the whole directly.
struct ScannerHealth {
    struct Adapter {
        var name: String
        var state: AdapterHealth.State
        var detail: String?
        var everUp = false
    }

    let backend: String
    private(set) var adapters: [Adapter]
    /// The whole's state when there are no adapters.
    private var direct: ScannerStatus.State
    private var directDetail: String?

    /// Adapters found by `auto` beyond the configured ones are kept up to this many.
    static let maxAdapters = 32

    init(backend: String, adapters: [String] = []) {
        self.backend = backend
        self.adapters = adapters.prefix(Self.maxAdapters).map { Adapter(name: $0, state: .down) }
        direct = .down
    }

    /// What a state message carries: the whole and each adapter's state.
    var published: ScannerStatus {
        ScannerStatus(
            backend: backend, state: state, adapters: adapters.map { AdapterHealth(name: $0.name, state: $0.state) })
    }

    /// What a status reply carries: with the reasons (the counters are the backends' to add).
    var detailed: ScannerStatus {
        var status = published
        status.detail = detail
        for index in adapters.indices { status.adapters[index].detail = adapters[index].detail }
        return status
    }

    var state: ScannerStatus.State {
        guard !adapters.isEmpty else { return direct }
        let scanning = adapters.count { $0.state == .up }
        let stopped = adapters.count { $0.state == .none }
        if stopped == adapters.count { return .none }
        if scanning == 0 { return .down }
        return scanning + stopped == adapters.count ? .up : .degraded
    }

    /// Why the scanner is not (wholly) up: one adapter's reason as it gave it; several adapters'
    /// reasons each after its name.
    var detail: String? {
        guard !adapters.isEmpty else { return directDetail }
        if adapters.count == 1 { return adapters[0].detail }
        let reasons = adapters.compactMap { adapter in
            adapter.state == .up ? nil : adapter.detail.map { "\(adapter.name): \($0)" }
        }
        return reasons.isEmpty ? nil : reasons.joined(separator: "; ")
    }

    /// Records a backend's report for `adapter` (nil: the whole, for a backend without adapters).
    /// Returns the adapter's state before and after; an adapter not seen before is added (auto),
    /// up to `maxAdapters`, past which its reports are ignored (nil).
    mutating func set(
        _ state: ScannerStatus.State, detail: String?, adapter name: String?
    ) -> (before: AdapterHealth.State, after: AdapterHealth.State)? {
        guard let name else {
            let before = direct
            direct = state
            directDetail = detail
            return (Self.adapterState(before, everUp: false), Self.adapterState(state, everUp: false))
        }
        let index: Int
        if let known = adapters.firstIndex(where: { $0.name == name }) {
            index = known
        } else {
            guard adapters.count < Self.maxAdapters else { return nil }
            adapters.append(Adapter(name: name, state: .down))
            index = adapters.count - 1
        }
        let before = adapters[index].state
        if state == .up { adapters[index].everUp = true }
        adapters[index].state = Self.adapterState(state, everUp: adapters[index].everUp)
        adapters[index].detail = detail
        return (before, adapters[index].state)
    }

    private static func adapterState(_ state: ScannerStatus.State, everUp: Bool) -> AdapterHealth.State {
        switch state {
        case .up, .degraded: .up
        case .down: everUp ? .recovering : .down
        case .none: .none
        }
    }
}

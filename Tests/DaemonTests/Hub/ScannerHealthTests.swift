import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The scanner's state from its adapters' (issue 32): up while all scan, degraded while some do,
/// down while none does; an adapter that scanned and lost it is recovering.
@Suite struct ScannerHealthTests {
    static func health(_ states: [ScannerStatus.State]) -> ScannerHealth {
        var health = ScannerHealth(backend: "hci", adapters: states.indices.map { "hci\($0)" })
        for (index, state) in states.enumerated() {
            _ = health.set(state, detail: state == .up ? nil : "why \(index)", adapter: "hci\(index)")
        }
        return health
    }

    @Test(arguments: [
        ([ScannerStatus.State.up], ScannerStatus.State.up),
        ([.down], .down),
        ([.up, .up], .up),
        ([.up, .down], .degraded),
        ([.down, .up, .up], .degraded),
        ([.down, .down], .down),
        ([.none, .none], .none),
        ([.up, .none], .up),
        ([.down, .none], .down),
    ])
    func theWholeFollowsItsAdapters(states: [ScannerStatus.State], whole: ScannerStatus.State) {
        #expect(Self.health(states).state == whole)
    }

    @Test func anAdapterThatWasUpRecovers() {
        var health = ScannerHealth(backend: "hci", adapters: ["hci1", "hci2"])
        #expect(health.published.adapters.map(\.state) == [.down, .down])
        #expect(health.set(.up, detail: nil, adapter: "hci1")! == (before: .down, after: .up))
        #expect(health.set(.down, detail: "gone", adapter: "hci1")! == (before: .up, after: .recovering))
        #expect(health.set(.down, detail: "missing", adapter: "hci2")! == (before: .down, after: .down))
        #expect(health.published.adapters.map(\.state) == [.recovering, .down])
        #expect(health.detailed.detail == "hci1: gone; hci2: missing")
        #expect(health.detailed.adapters.map(\.detail) == ["gone", "missing"])
        // The published status carries no reasons: a new retry delay is no new publication.
        #expect(health.published.detail == nil)
        #expect(health.published.adapters.allSatisfy { $0.detail == nil })
    }

    @Test func oneAdaptersReasonIsGivenAsItIs() {
        var health = ScannerHealth(backend: "hci", adapters: ["hci0"])
        _ = health.set(.down, detail: "adapter hci0 is gone; retrying in 4 s", adapter: "hci0")
        #expect(health.detailed.detail == "adapter hci0 is gone; retrying in 4 s")
    }

    @Test func adaptersFoundLaterJoinUpToTheCap() {
        var health = ScannerHealth(backend: "hci")
        for index in 0..<(ScannerHealth.maxAdapters + 3) {
            let change = health.set(.up, detail: nil, adapter: "hci\(index)")
            #expect((change != nil) == (index < ScannerHealth.maxAdapters))
        }
        #expect(health.adapters.count == ScannerHealth.maxAdapters)
        #expect(health.state == .up)
    }

    @Test func aBackendWithoutAdaptersSetsTheWhole() {
        var health = ScannerHealth(backend: "replay")
        _ = health.set(.up, detail: nil, adapter: nil)
        #expect(health.published == ScannerStatus(backend: "replay", state: .up))
        _ = health.set(.down, detail: "capture truncated", adapter: nil)
        #expect(health.detailed.detail == "capture truncated")
    }
}

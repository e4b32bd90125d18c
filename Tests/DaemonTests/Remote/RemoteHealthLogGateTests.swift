import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The remote poller's health lines: one per transition per minute (issue 14).
struct RemoteHealthLogGateTests {
    typealias Gate = RemoteHealthLogGate
    static let down = Gate.Transition(from: .healthy, to: .failing(.httpStatus))
    static let up = Gate.Transition(from: .failing(.httpStatus), to: .healthy)

    @Test func aFlappingRemoteWritesEachTransitionOnceAMinuteWithTheCountHeldBack() {
        var gate = Gate()
        #expect(gate.admit(Self.down, at: 0) == 0)
        #expect(gate.admit(Self.up, at: 100_000) == 0)
        // 30 more flaps within the minute: all held back, counted.
        for step in 1...30 {
            let now = Int64(step) * 200_000
            #expect(gate.admit(Self.down, at: now) == nil)
            #expect(gate.admit(Self.up, at: now + 100_000) == nil)
        }
        #expect(gate.heldBack == 60)
        #expect(gate.owed == Self.up)
        // Healthy polls within the minute owe the line but do not write it yet.
        #expect(gate.takeOwed(at: 50_000_000) == nil)
        // Once the minute of "recovered" has passed, the owed line comes, with the count.
        let owed = gate.takeOwed(at: 60_100_000)
        #expect(owed?.transition == Self.up && owed?.heldBack == 60)
        #expect(gate.takeOwed(at: 60_200_000) == nil)
        #expect(gate.heldBack == 0)
    }

    @Test func distinctTransitionsAreNotHeldBackByEachOther() {
        var gate = Gate()
        let toNotJSON = Gate.Transition(from: .failing(.httpStatus), to: .failing(.notJSON))
        #expect(gate.admit(Self.down, at: 0) == 0)
        #expect(gate.admit(toNotJSON, at: 1) == 0)
        #expect(gate.admit(Gate.Transition(from: .failing(.notJSON), to: .healthy), at: 2) == 0)
        // A minute later the same transition is written again.
        #expect(gate.admit(Self.down, at: 60_000_000) == 0)
        // A clock that went back holds nothing back.
        #expect(gate.admit(toNotJSON, at: 0) == 0)
    }
}

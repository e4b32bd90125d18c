import NIOHTTP1
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The request side shared by the web kiosk and the metrics endpoint, on its own.
@Suite struct SmallHTTPRequestGateTests {
    static let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/metrics")

    @Test func aWholeRequestIsRoutedWhenWritableAndParkedUntilItIs() {
        var gate = SmallHTTPRequestGate(methods: [.GET])
        guard case .wait = gate.read(.head(Self.head), writable: true) else { Issue.record("head alone"); return }
        guard case .route(let routed) = gate.read(.end(nil), writable: true) else { Issue.record("not routed"); return }
        #expect(routed.uri == "/metrics")

        _ = gate.read(.head(Self.head), writable: false)
        guard case .parked = gate.read(.end(nil), writable: false) else { Issue.record("not parked"); return }
        #expect(gate.unpark(writable: false) == nil)
        #expect(gate.unpark(writable: true)?.uri == "/metrics")
        #expect(gate.unpark(writable: true) == nil, "a parked request is handed over once")
    }

    @Test func aClosingConnectionDropsItsParkedRequestAndRefusesOthers() {
        var gate = SmallHTTPRequestGate(methods: [.GET])
        _ = gate.read(.head(Self.head), writable: false)
        _ = gate.read(.end(nil), writable: false)
        gate.close()
        #expect(gate.unpark(writable: true) == nil)
        guard case .wait = gate.read(.head(Self.head), writable: true) else { Issue.record("read after close"); return }

        var other = SmallHTTPRequestGate(methods: [.GET])
        let post = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/metrics")
        guard case .refuse(let refusal) = other.read(.head(post), writable: true) else {
            Issue.record("POST not refused")
            return
        }
        #expect(refusal.status == .methodNotAllowed)
    }
}

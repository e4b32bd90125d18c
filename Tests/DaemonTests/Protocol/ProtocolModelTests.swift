import Foundation
import NIOCore
import Testing

@testable import BeacondClient
@testable import BeacondCore

extension StatusMessage {
    /// A beacon with every field set, numbers that print exactly.
    static func sampleBeacon() -> BeaconReport {
        BeaconReport(
            key: "zone 3 @ C0:FF:EE:00:00:03", kind: "circuit", zone: 3, sourceID: nil, address: "C0:FF:EE:00:00:03",
            mode: "red_flag", rssi: -61, distance: 3.98, sequence: 17, ttl: 10, active: true, held: false,
            contested: false, ttlLeft: 10, lastSeen: 0.5, temperature: 24, rejected: nil)
    }

    /// A complete status with nothing optional filled in.
    static func sample() -> StatusMessage {
        let state = StateMessage(
            seq: 1, time: WallTime(micros: 1_778_932_800_000_000), mode: "normal", source: "remote", zone: nil,
            beacon: nil, remote: nil, scanner: ScannerStatus(backend: "test", state: .up))
        return StatusMessage(
            uptime: 1, state: state, overrides: [], overridesOmitted: 0, beacons: [], beaconsOmitted: 0, remote: nil,
            scanner: ScannerStatus(backend: "test", state: .up), counters: HubStatusCounters())
    }
}

/// Every message of protocol v1 renders (JSONWriter) and decodes (JSONDecoder) to the same value,
/// with the field names of docs/protocol.md.
@Suite struct ProtocolModelTests {
    /// Renders `message`, checks it is one line, decodes it back through `ServerMessage`.
    func roundTrip(_ message: some RenderedMessage) throws -> ServerMessage {
        let line = message.line
        #expect(line.last == UInt8(ascii: "\n"))
        #expect(line.dropLast().contains(UInt8(ascii: "\n")) == false)
        return try ServerMessage(line: Array(line.dropLast()))
    }

    func text(_ message: some RenderedMessage) -> String {
        String(decoding: message.line, as: UTF8.self)
    }

    static let remote = RemoteReport(
        mode: "normal", reportedMode: "normal", fresh: true, latched: false, restored: false, age: 1.25,
        message: "Session \"running\"\n", lastError: nil)

    @Test func helloRoundTrips() throws {
        let hello = HelloMessage(protocolVersion: 1, version: "0.1.0")
        #expect(text(hello) == #"{"type":"hello","protocol":1,"version":"0.1.0"}"# + "\n")
        #expect(try roundTrip(hello) == .hello(hello))
        #expect(HelloMessage().version == BeacondVersion.current)
    }

    @Test func stateRoundTrips() throws {
        var state = StatusMessage.sample().state
        state.seq = 7
        state.time = WallTime(micros: 1_778_932_800_123_456)
        state.mode = "red_flag"
        state.source = "beacon"
        state.zone = 3
        state.beacon = StatusMessage.sampleBeacon()
        state.remote = Self.remote
        state.scanner = ScannerStatus(backend: "hci", state: .up, adapters: [AdapterHealth(name: "hci0", state: .up)])
        let line = text(state)
        #expect(line.hasPrefix(#"{"type":"state","seq":7,"ts":1778932800.123456,"mode":"red_flag","source":"beacon","#))
        #expect(line.contains(#""distance_m":3.98,"seq":17,"ttl":10,"active":true"#))
        #expect(line.contains(#""age_s":1.250,"message":"Session \"running\"\n","last_error":null"#))
        #expect(
            line.hasSuffix(
                #""scanner":{"backend":"hci","state":"up","adapters":[{"name":"hci0","state":"up"}]}}"# + "\n"))
        #expect(try roundTrip(state) == .state(state))

        // Nulls where the protocol allows them.
        var bare = state
        bare.zone = nil
        bare.beacon = nil
        bare.remote = nil
        #expect(text(bare).contains(#""zone":null,"zone_name":null,"beacon":null,"remote":null"#))
        #expect(try roundTrip(bare) == .state(bare))
    }

    /// `zone_name` (issue 11) sits right after `zone`, in the state and in the beacon shape; the
    /// rendering decodes back to the same value and re-renders byte for byte; a line from an older
    /// daemon, without the field, decodes with nil names.
    @Test func zoneNamesRoundTripAndMayBeAbsent() throws {
        var state = StatusMessage.sample().state
        state.source = "beacon"
        state.zone = 3
        state.zoneName = "Main \"grand\" stand ✓"
        var beacon = StatusMessage.sampleBeacon()
        beacon.zoneName = state.zoneName
        state.beacon = beacon
        let line = text(state)
        #expect(line.contains(#""zone":3,"zone_name":"Main \"grand\" stand ✓","beacon":{"#))
        #expect(line.contains(#""kind":"circuit","zone":3,"zone_name":"Main \"grand\" stand ✓","source_id":null"#))
        let decoded = try roundTrip(state)
        #expect(decoded == .state(state))
        guard case .state(let decodedState) = decoded else { return }
        #expect(decodedState.line == state.line)

        let older = line.replacingOccurrences(of: #","zone_name":"Main \"grand\" stand ✓""#, with: "")
        #expect(!older.contains("zone_name"))
        var expected = state
        expected.zoneName = nil
        expected.beacon?.zoneName = nil
        #expect(try ServerMessage(line: Array(older.utf8.dropLast())) == .state(expected))

        var unnamed = StatusMessage.sampleBeacon()
        unnamed.zoneName = nil
        let message = BeaconMessage(time: WallTime(micros: 1_778_932_800_200_000), beacon: unnamed)
        #expect(text(message).contains(#""zone":3,"zone_name":null,"source_id":null"#))
        #expect(try roundTrip(message) == .beacon(message))
    }

    /// `adapters` and the `degraded` state (issue 32): a line from an older daemon, without
    /// `adapters`, decodes with none; `degraded` round-trips.
    @Test func scannerAdaptersRoundTripAndMayBeAbsent() throws {
        var state = StatusMessage.sample().state
        state.scanner = ScannerStatus(
            backend: "hci", state: .degraded,
            adapters: [AdapterHealth(name: "hci1", state: .up), AdapterHealth(name: "hci2", state: .down)])
        let line = text(state)
        #expect(
            line.contains(
                #""scanner":{"backend":"hci","state":"degraded","adapters":[{"name":"hci1","state":"up"},"#
                    + #"{"name":"hci2","state":"down"}]}"#))
        #expect(try roundTrip(state) == .state(state))
        let older = line.replacingOccurrences(
            of: #","adapters":[{"name":"hci1","state":"up"},{"name":"hci2","state":"down"}]"#, with: "")
        var expected = state
        expected.scanner.adapters = []
        #expect(try ServerMessage(line: Array(older.utf8.dropLast())) == .state(expected))
    }

    @Test func beaconRoundTrips() throws {
        var beacon = StatusMessage.sampleBeacon()
        beacon.kind = "staff"
        beacon.sourceID = 4_000_000_000
        beacon.rssi = nil
        beacon.distance = nil
        beacon.active = false
        beacon.held = true
        beacon.contested = true
        beacon.ttlLeft = nil
        beacon.lastSeen = nil
        beacon.temperature = nil
        beacon.rejected = "older"
        let message = BeaconMessage(time: WallTime(micros: 1_778_932_800_200_000), beacon: beacon)
        #expect(text(message).hasPrefix(#"{"type":"beacon","ts":1778932800.200000,"beacon":{"key":"#))
        #expect(try roundTrip(message) == .beacon(message))
        let active = BeaconMessage(time: message.time, beacon: StatusMessage.sampleBeacon())
        #expect(try roundTrip(active) == .beacon(active))
    }

    @Test func statusRoundTripsWithEveryPart() throws {
        var status = StatusMessage.sample()
        status.uptime = 12.345
        status.overrides = [StatusMessage.sampleBeacon()]
        status.overridesOmitted = 3
        status.beacons = [StatusMessage.sampleBeacon(), StatusMessage.sampleBeacon()]
        status.beaconsOmitted = 0
        status.remote = Self.remote
        status.scanner = ScannerStatus(
            backend: "hci", state: .degraded, detail: "hci0: adapter hci0 is gone; retrying in 4 s",
            adapters: [
                AdapterHealth(
                    name: "hci0", state: .recovering, detail: "adapter hci0 is gone; retrying in 4 s", reports: 60,
                    restarts: 1, reconnects: 2),
                AdapterHealth(name: "hci1", state: .up, reports: 40, restarts: 0, reconnects: 0),
            ])
        status.counters.signals = 9
        status.counters.subscribers = 2
        status.scan = ScanStatus(
            reports: 100, droppedSignals: 1,
            copies: CopyFilterStatus(passed: 70, dropped: 30, handovers: 2, evictions: 0))
        var hci = HCIBackendStatus(adapter: "hci0", mode: nil)
        hci.events = 6
        hci.lastMalformed = "report 2: length 40 past the event end (at byte 12)"
        hci.recording = RecordingStatus(path: "/tmp/x.btsnoop", active: true, records: 5, rotations: 1)
        status.hci = hci
        status.bluez = BlueZStatus()
        var poller = RemotePollerStatus(url: "https://example.org/state")
        poller.polls = 8
        poller.failures = ["timeout": 2, "http_status": 0]
        poller.lastErrorAt = WallTime(micros: 1_747_396_810_000_001)
        status.remotePoller = poller
        var server = ServerStatus()
        server.clients = 1
        server.maxClients = 1024
        status.server = server
        let line = text(status)
        #expect(line.hasPrefix(#"{"type":"status","protocol":1,"version":"#))
        #expect(line.contains(#""uptime_s":12.345,"state":{"seq":1,"ts":"#))
        #expect(
            line.contains(
                #""state":"degraded","detail":"hci0: adapter hci0 is gone; retrying in 4 s","#
                    + #""adapters":[{"name":"hci0","state":"recovering","#
                    + #""detail":"adapter hci0 is gone; retrying in 4 s","reports":60,"restarts":1,"reconnects":2},"#
                    + #"{"name":"hci1","state":"up","reports":40,"restarts":0,"reconnects":0}]}"#))
        #expect(line.contains(#""copies":{"passed":70,"dropped":30,"handovers":2,"evictions":0}"#))
        #expect(line.contains(#""failures":{"timeout":2,"http_status":0}"#))
        #expect(try roundTrip(status) == .status(status))

        // Optional parts are left out, not null; HCI's `last_malformed` and `recording` likewise.
        var plain = StatusMessage.sample()
        plain.hci = HCIBackendStatus(adapter: "hci0", mode: "legacy")
        let plainLine = text(plain)
        for absent in [
            "\"scan\"", "\"bluez\"", "\"remote_poller\"", "\"server\"", "last_malformed", "recording",
            "\"detail\"",
        ] {
            #expect(!plainLine.contains(absent), "\(absent) in \(plainLine)")
        }
        #expect(try roundTrip(plain) == .status(plain))
    }

    @Test func shortMessagesRoundTrip() throws {
        #expect(text(PongMessage()) == #"{"type":"pong"}"# + "\n")
        #expect(try roundTrip(PongMessage()) == .pong(PongMessage()))
        let bye = ByeMessage(reason: "shutting down")
        #expect(text(bye) == #"{"type":"bye","reason":"shutting down"}"# + "\n")
        #expect(try roundTrip(bye) == .bye(bye))
        let error = ErrorMessage("unknown command \"\u{1B}\" (expected status, subscribe, ping or history)")
        let escaped =
            #"{"type":"error","error":"unknown command \"\u001b\" (expected status, subscribe, ping or history)"}"#
        #expect(text(error) == escaped + "\n")
        #expect(try roundTrip(error) == .error(error))
        for beacons in [true, false] {
            let subscribed = SubscribedMessage(beacons: beacons)
            #expect(text(subscribed) == #"{"type":"subscribed","beacons":\#(beacons)}"# + "\n")
            #expect(try roundTrip(subscribed) == .subscribed(subscribed))
        }
        let dropped = DroppedMessage(count: 12)
        #expect(text(dropped) == #"{"type":"dropped","count":12}"# + "\n")
        #expect(try roundTrip(dropped) == .dropped(dropped))
    }

    /// Clients ignore types and fields they do not know; a known type with a wrong field is an error.
    @Test func unknownTypesAndFieldsAreIgnoredWrongShapesAreNot() throws {
        #expect(try ServerMessage(line: Array(#"{"type":"later","x":1}"#.utf8)) == .unknown(type: "later"))
        #expect(
            try ServerMessage(line: Array(#"{"type":"dropped","count":3,"new":[1]}"#.utf8))
                == .dropped(DroppedMessage(count: 3)))
        #expect(throws: DecodingError.self) {
            try ServerMessage(line: Array(#"{"type":"dropped","count":1e300}"#.utf8))
        }
        #expect(throws: DecodingError.self) { try ServerMessage(line: Array(#"{"type":"dropped"}"#.utf8)) }
        #expect(throws: DecodingError.self) { try ServerMessage(line: Array(#"{"count":1}"#.utf8)) }
    }

    /// A status whose numbers do not fit is refused with the field named, not trapped on.
    @Test(arguments: [("1e300", "cannot read"), (#""many""#, "overrides_omitted"), ("null", "overrides_omitted")])
    func anUnreadableStatusIsAnError(value: String, named field: String) throws {
        var line = text(StatusMessage.sample())
        line = line.replacingOccurrences(of: #""overrides_omitted":0"#, with: #""overrides_omitted":\#(value)"#)
        let message = TrackStateClient.Message(type: "status", object: [:], line: Array(line.utf8.dropLast()))
        do {
            _ = try message.status(path: "/run/x.sock")
            Issue.record("decoded \(line)")
        } catch {
            #expect("\(error)".hasPrefix("/run/x.sock: the daemon sent a status message this version cannot read: "))
            #expect("\(error)".contains(field))
        }
    }

    /// A status the hub builds (with a server attached) decodes, and renders back to the same bytes.
    @Test func theHubsStatusDecodesAndRendersBackByteForByte() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        try harness.ingest(zone: 3, mode: .redFlag, sequence: 42, address: 0xC0FFEE000003, rssi: -61)
        try harness.ingest(zone: 8, mode: .normal, address: 0xC0FFEE000008, rssi: -127)
        let line = try harness.onLoop { harness.status.line() }
        let status = try JSONDecoder().decode(StatusMessage.self, from: Data(line))
        #expect(status.state.mode == "red_flag")
        #expect(status.beacons.count == 2)
        #expect(status.server?.maxClients ?? 0 > 0)
        #expect(status.line == line)
        let state = try harness.onLoop { harness.publisher.stateLine }
        let stateBytes = Array(state.readableBytesView)
        guard case .state(let decoded) = try ServerMessage(line: Array(stateBytes.dropLast())) else {
            Issue.record("not a state line")
            return
        }
        #expect(decoded.line == stateBytes)
    }

    /// Over the socket: typed requests out, typed messages in.
    @Test func aClientSendsAndReadsTypedMessages() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        let client = try TrackStateClient(path: harness.path)
        defer { client.close() }
        #expect(try client.readServerMessage() == .hello(HelloMessage()))
        guard case .state(let state) = try client.readServerMessage() else {
            Issue.record("no state after hello")
            return
        }
        #expect(state.seq >= 1)
        try client.send(.subscribe(beacons: false))
        try client.send(.ping)
        try client.send(.status)
        var answers: [ServerMessage] = []
        while answers.count < 3 {
            let message = try client.readServerMessage()
            if case .state = message { continue }
            answers.append(message)
        }
        #expect(answers.first == .subscribed(SubscribedMessage(beacons: false)))
        #expect(answers.dropFirst().first == .pong(PongMessage()))
        guard case .status(let status) = answers.last else {
            Issue.record("no status: \(answers)")
            return
        }
        #expect(status.server?.clients == 1)
        #expect(status.protocolVersion == 1)
    }

    @Test func requestsDecodeAndRenderAsClientsSendThem() throws {
        for request in [ClientRequest.status, .ping, .subscribe(beacons: true), .subscribe(beacons: false)] {
            let line = try #require(request.commandLine)
            #expect(ClientRequest.parse(ByteBuffer(string: line)) == request)
            #expect(try JSONDecoder().decode(ClientRequest.self, from: Data(line.utf8)) == request)
        }
        #expect(ClientRequest.invalid(reason: "x").commandLine == nil)
        #expect(
            try JSONDecoder().decode(ClientRequest.self, from: Data(#"{"cmd":"dance"}"#.utf8))
                == .invalid(reason: "unknown command \"dance\" (expected status, subscribe, ping or history)"))
        // A repeated key is ambiguous: refused, never answered as one of them (issue 25, class 7).
        #expect(
            ClientRequest.parse(ByteBuffer(string: #"{"cmd":"ping","cmd":"dance"}"#))
                == .invalid(reason: #"duplicate key "cmd" at byte 14"#))
    }
}

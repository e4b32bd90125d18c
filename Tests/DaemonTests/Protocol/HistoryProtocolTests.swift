import BLEPayload
import CircuitState
import Foundation
import NIOCore
import Testing

@testable import BeacondClient

/// The `history` request and its reply (docs/protocol.md, "history").
@Suite struct HistoryProtocolTests {
    func parse(_ text: String) -> ClientRequest? {
        ClientRequest.parse(ByteBuffer(string: text))
    }

    @Test func historyRequestsParseWithTheirDefaultsAndBounds() throws {
        #expect(parse(#"{"cmd":"history"}"#) == .history(HistoryQuery()))
        #expect(
            parse(#"{"cmd":"history","since_s":7200,"after":12,"limit":5}"#)
                == .history(HistoryQuery(sinceSeconds: 7200, after: 12, limit: 5)))
        let query = HistoryQuery(sinceSeconds: 60, after: 3, limit: 10)
        #expect(parse(query.commandLine) == .history(query))
        #expect(try JSONDecoder().decode(ClientRequest.self, from: Data(query.commandLine.utf8)) == .history(query))
        let sinceReason = #""since_s" must be a whole number of seconds from 1 to 2592000"#
        for bad in ["0", "-5", "2592001", "1.5", "\"2h\"", "null", "1e400"] {
            #expect(parse(#"{"cmd":"history","since_s":\#(bad)}"#) == .invalid(reason: sinceReason), "\(bad)")
        }
        #expect(parse(#"{"cmd":"history","after":-1}"#) == .invalid(reason: #""after" must be a whole number from 0"#))
        for bad in ["0", "1001", "true"] {
            #expect(
                parse(#"{"cmd":"history","limit":\#(bad)}"#)
                    == .invalid(reason: #""limit" must be a whole number from 1 to 1000"#))
        }
    }

    @Test func aHistoryPageRendersAndDecodesToTheSameStretches() throws {
        let address = BluetoothAddress(rawValue: 0xC0_FF_EE_00_00_03)
        let stretches = [
            RaceStretch(
                row: .published, start: 1, end: 5, mode: .redFlag,
                detail: .published(PublishedDetail(source: .beacon, zone: 3, address: address, sequence: 7))),
            RaceStretch(
                row: .published, start: 5, end: 9, mode: nil, detail: .published(PublishedDetail(source: .none))),
            RaceStretch(
                row: .raceControl, start: 2, end: 8, mode: .evacuation,
                detail: .raceControl(
                    RaceControlDetail(
                        fresh: false, latched: true, message: "Evacuate \"now\" <b>", failures: 2,
                        lastFailure: "timeout"))),
            RaceStretch(
                row: .zone(3), start: 1, end: 6, mode: .redFlag,
                detail: .claim(
                    ClaimDetail(
                        key: .circuit(zone: 3, address: address), version: 1, sequence: 7, ttl: 10, rssi: -61,
                        signed: false, lastSequence: 8, beacons: 2, contested: true, heldFrom: 5, end: .deescalated))),
            RaceStretch(
                row: .zone(4), start: 3, end: 4, mode: .safetyCar,
                detail: .claim(
                    ClaimDetail(
                        key: .staff(sourceID: 0xC0_FFEE, address: address), version: 2, sequence: 1, ttl: 30,
                        rssi: nil, signed: true, lastSequence: 1, end: .expired))),
        ]
        let page = HistoryPage(stretches: stretches, next: 42, more: true, skipped: 3)
        let message = HistoryMessage(
            now: 1_778_932_900_000_000, since: 1_778_932_800_000_000, page: page, kept: 40, bytes: 4_000, dropped: 3,
            limit: 100_000, byteLimit: 1 << 20)
        let line = message.line
        #expect(line.dropLast().contains(UInt8(ascii: "\n")) == false)
        #expect(try ServerMessage(line: Array(line.dropLast())) == .history(message))
        let text = String(decoding: line, as: UTF8.self)
        #expect(text.hasPrefix(#"{"type":"history","now_us":1778932900000000,"since_us":1778932800000000,"#))
        #expect(text.contains(#"{"row":"zone 4","mode":"safety_car","start_us":3,"end_us":4,"kind":"staff","#))
    }

    @Test func aStretchWithAnUnknownRowOrModeIsRefused() {
        let bad = [
            #""row":"zone x","mode":"normal""#, #""row":"zone 1","mode":"purple""#, #""row":"pit","mode":"normal""#,
        ]
        for fields in bad {
            let line =
                #"{"type":"history","now_us":1,"since_us":null,"next":0,"more":false,"skipped":0,"kept":0,"#
                + #""bytes":0,"dropped":0,"limit":1,"byte_limit":1,"stretches":[{"# + fields
                + #","start_us":0,"end_us":1,"source":"none","signed":false}]}"#
            #expect(throws: (any Error).self) { try ServerMessage(line: Array(line.utf8)) }
        }
    }
}

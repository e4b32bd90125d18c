import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

@Suite(.serialized) struct ReplayCommandTests {
    static let example: String = {
        let path = BeacondProcess.temporaryFile("race-weekend.btsnoop")
        _ = try? BeacondProcess.run(["example-capture", path])
        return path
    }()

    @Test func exampleCaptureReplaysItsFlagChanges() throws {
        let result = try BeacondProcess.run(["replay", "--json", Self.example])
        #expect(result.status == 0)
        let lines = try result.jsonLines()
        #expect(lines.count == 728)
        let signals = lines.compactMap { $0["signal"] as? [String: Any] }
        #expect(signals.count == lines.count)
        let modes = Set(signals.compactMap { $0["mode"] as? String })
        #expect(modes == ["normal", "safety_car", "red_flag", "evacuation"])
        let staff = signals.filter { $0["version"] as? Int == 2 }
        #expect(!staff.isEmpty)
        #expect(staff.allSatisfy { $0["source_id"] as? Int == 0xC0FFEE && $0["temperature"] is NSNull })
        #expect(result.stderr.contains("753 reports"))
        #expect(result.stderr.contains("728 GeoRacing signals"))
        #expect(result.stderr.contains("bad_version=1"))
        #expect(result.stderr.contains("reports/s"))
    }

    @Test func jsonFieldsFollowTheContract() throws {
        let result = try BeacondProcess.run(["replay", "--json", "--all", Self.example])
        let lines = try result.jsonLines()
        #expect(lines.count == 753)
        let first = try #require(lines.first)
        #expect(first["ts"] as? Double == 1_778_932_800.001234)
        #expect(first["addr"] as? String == "C0:FF:EE:00:00:01")
        #expect(first["addr_type"] as? String == "public")
        #expect(first["kind"] as? String == "adv_nonconn_ind")
        #expect(first["rssi"] as? Int == -63)
        #expect(first["tx_power"] is NSNull)
        #expect(first["ad_tx_power"] is NSNull)
        let mfr = try #require(first["mfr"] as? [[String: Any]])
        #expect(mfr.first?["company"] as? Int == 0x1234)
        #expect(mfr.first?["data"] as? String == "010001000000640a18")
        let signal = try #require(first["signal"] as? [String: Any])
        #expect(signal["version"] as? Int == 1)
        #expect(signal["zone"] as? Int == 1)
        #expect(signal["mode"] as? String == "normal")
        #expect(signal["mode_raw"] as? Int == 0)
        #expect(signal["flags"] as? Int == 0)
        #expect(signal["seq"] as? Int == 100)
        #expect(signal["ttl"] as? Int == 10)
        #expect(signal["temperature"] as? Int == 24)
        #expect(signal["source_id"] is NSNull)
        // A report without a GeoRacing frame has no "signal" key; a rejected one says why.
        let iBeacon = try #require(lines.first { $0["addr"] as? String == "4A:11:22:33:44:55" })
        #expect(iBeacon["signal"] == nil)
        #expect(iBeacon["addr_type"] as? String == "random")
        let rejected = try #require(lines.first { $0["georacing_rejected"] != nil })
        #expect(rejected["georacing_rejected"] as? String == "bad_version")
    }

    @Test func tableIsReadable() throws {
        let result = try BeacondProcess.run(["replay", Self.example])
        #expect(result.status == 0)
        #expect(result.lines.first?.hasPrefix("TIME (UTC)") == true)
        let redFlag = try #require(result.lines.first { $0.contains("RED FLAG") })
        #expect(redFlag.contains("2026-05-16T12:01:"))
        #expect(redFlag.contains("zone"))
    }

    @Test(arguments: ["0x1234", "4660", "0X1234"])
    func companyIDTakesDecimalOrHex(value: String) throws {
        let result = try BeacondProcess.run(["replay", "--json", "--company-id", value, Self.example])
        #expect(result.status == 0)
        #expect(result.lines.count == 728)
    }

    @Test func otherCompanyIDFindsNoSignals() throws {
        let result = try BeacondProcess.run(["replay", "--json", "--company-id=0xBEEF", Self.example])
        #expect(result.status == 0)
        #expect(result.lines.isEmpty)
        #expect(result.stderr.contains("0 GeoRacing signals"))
    }

    @Test func badCompanyIDIsAUsageError() throws {
        let result = try BeacondProcess.run(["replay", "--company-id", "0xZZ", Self.example])
        #expect(result.status == 64)
        #expect(result.stderr.contains("company-id"))
    }

    @Test func truncatedCaptureKeepsOutputBeforeTheErrorAndExitsNonZero() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: Self.example))
        // Walk ten btsnoop records (24-byte header with a big-endian included length at +4).
        var offset = 16
        for _ in 0..<10 {
            let included = bytes[offset + 4..<offset + 8].reduce(0) { $0 << 8 | Int($1) }
            offset += 24 + included
        }
        let cut = BeacondProcess.temporaryFile("cut.btsnoop")
        try bytes.prefix(offset + 20).write(to: URL(fileURLWithPath: cut))
        let result = try BeacondProcess.run(["replay", "--json", cut])
        #expect(result.status == 1)
        #expect(result.lines.count == 10)
        #expect(result.stderr.contains("\(cut): record 10 at byte \(offset): truncated: needs"))
    }

    @Test func unreadableFilesAreReportedAndTheRestStillReplayed() throws {
        let garbage = BeacondProcess.temporaryFile("garbage.bin")
        try Data("definitely not a capture".utf8).write(to: URL(fileURLWithPath: garbage))
        let result = try BeacondProcess.run(["replay", "--json", garbage, "/nonexistent/file.log", Self.example])
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(garbage): file header at byte 0: not a btsnoop, pcap or pcapng capture"))
        #expect(result.stderr.contains("/nonexistent/file.log: file header at byte 0: cannot open"))
        #expect(result.lines.count == 728)
    }

    @Test(.enabled(if: SharedCaptures.available, "../shared/captures is absent: skipping replay of real captures"))
    func extendedReportsCarryTheirProperties() throws {
        let result = try BeacondProcess.run([
            "replay", "--json", "--all", SharedCaptures.path("nick0451_dsp408__btsnoop_hci.log"),
        ])
        #expect(result.status == 0)
        let lines = try result.jsonLines()
        #expect(lines.count == 154)
        for line in lines {
            let kind = try #require(line["kind"] as? String)
            if kind == "ext_adv" {
                #expect(line["connectable"] is Bool && line["scannable"] is Bool)
                #expect(line["directed"] is Bool && line["scan_response"] is Bool)
            } else {
                #expect(line["connectable"] == nil)
            }
        }
    }

    @Test(.enabled(if: SharedCaptures.available, "../shared/captures is absent: skipping replay of real captures"))
    func btmonCapturesNameTheirController() throws {
        let result = try BeacondProcess.run([
            "replay", "--json", "--all", SharedCaptures.path("darkmentorllc_Blue2thprinting__import.snoop"),
        ])
        let lines = try result.jsonLines()
        #expect(lines.count == 38)
        #expect(lines.allSatisfy { $0["controller"] is Int })
    }
}

import BLEPayload
import BeacondTestSupport
import Foundation
import Glibc
import Testing

@testable import BeacondCore

/// Venue keys, day keys and the v3 tag (docs/security.md, docs/frames.md "v3").
@Suite struct VenueKeyringTests {
    static let venueKey = [UInt8](0..<32)
    static let dayKey = HexText.bytes("7df62e975b533ac01a8aa594d0228f6e04e9036b1c45756e8d3fa2e95e236085")!
    /// 2026-11-28T08:00:00Z.
    static let signedAt: UInt32 = 1_795_852_800

    static var keyring: VenueKeyring {
        var keyring = VenueKeyring()
        keyring.addVenueKey(venueKey, id: 1)
        return keyring
    }

    static let unsigned = GeoRacingSignedFrame(
        keyID: 1, kind: .circuit, zone: 7, mode: .evacuation, sequence: 42, ttl: 10, temperature: 12,
        signedAt: signedAt)

    /// docs/frames.md's test vector, which `openssl kdf` and `openssl dgst -mac HMAC` reproduce.
    @Test func theTestVector() throws {
        #expect(VenueKeyring.day(of: Self.signedAt) == 20_785)
        #expect(VenueKeyring.deriveDayKey(venueKey: Self.venueKey, day: 20_785) == Self.dayKey)
        let signed = try #require(Self.keyring.signed(Self.unsigned, companyID: 0x1234))
        #expect(HexText.string(signed.encoded()) == "031000070300002a0a0c6b0a8a000000c4e1cdbcc1ec7b4e")
        #expect(Self.keyring.verify(signed, companyID: 0x1234) == .success(true))
        // Another company id is another message.
        #expect(Self.keyring.verify(signed, companyID: 0x1235) == .success(false))
    }

    /// Any single-bit change of the 24 bytes is caught: the layout refuses it, its key is unknown,
    /// or the tag no longer matches.
    @Test func everySingleBitChangeFails() throws {
        let frame = try #require(Self.keyring.signed(Self.unsigned, companyID: 0x1234)).encoded()
        var keyring = Self.keyring
        for id: UInt8 in [0, 3, 5, 9] { keyring.addVenueKey([UInt8](repeating: id, count: 32), id: id) }
        for bit in 0..<(frame.count * 8) {
            var bytes = frame
            bytes[bit / 8] ^= 1 << UInt8(bit % 8)
            guard let changed = try? GeoRacingSignedFrame(parsing: bytes) else { continue }
            #expect(keyring.verify(changed, companyID: 0x1234) != .success(true), "bit \(bit)")
        }
    }

    @Test func aWrongKeyOrKeyIDFails() throws {
        let signed = try #require(Self.keyring.signed(Self.unsigned, companyID: 0x1234))
        var other = VenueKeyring()
        other.addVenueKey([UInt8](repeating: 7, count: 32), id: 1)
        #expect(other.verify(signed, companyID: 0x1234) == .success(false))
        var relabelled = signed
        relabelled.keyID = 2
        #expect(Self.keyring.verify(relabelled, companyID: 0x1234) == .failure(.unknownKey))
    }

    /// A day key alone signs and verifies that day only.
    @Test func aDayKeyServesItsDayOnly() throws {
        var kiosk = VenueKeyring()
        kiosk.addDayKey(Self.dayKey, id: 1, day: 20_785)
        let signed = try #require(Self.keyring.signed(Self.unsigned, companyID: 0x1234))
        #expect(kiosk.verify(signed, companyID: 0x1234) == .success(true))
        var nextDay = Self.unsigned
        nextDay.signedAt += 86_400
        #expect(kiosk.signed(nextDay, companyID: 0x1234) == nil)
        let genuineNextDay = try #require(Self.keyring.signed(nextDay, companyID: 0x1234))
        #expect(kiosk.verify(genuineNextDay, companyID: 0x1234) == .failure(.unknownKey))
    }

    /// The tag against OpenSSL's HMAC on random keys and frames, as a third party would check it.
    @Test func openSSLAgrees() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") else {
            print("skipped: /usr/bin/openssl is missing (make deps installs it)")
            return
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<3 {
            let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let signedPart = [3] + (0..<15).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let message = GeoRacingSignedFrame.message(signedPart: signedPart, companyID: 0x1234)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = ["dgst", "-sha256", "-mac", "HMAC", "-macopt", "hexkey:" + HexText.string(key)]
            let input = Pipe()
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            input.fileHandleForWriting.write(Data(message))
            try input.fileHandleForWriting.close()
            let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            let expected = HexText.string(VenueKeyring.tag(of: signedPart, key: key, companyID: 0x1234))
            // OpenSSL prints all 32 bytes; the tag is the first 8.
            #expect(printed.contains("= " + expected), "\(printed)")
        }
    }
}

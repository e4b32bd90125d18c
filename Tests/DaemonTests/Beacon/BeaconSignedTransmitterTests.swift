import BLEPayload
import BeacondTestSupport
import CircuitState
import Foundation
import Logging
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The transmitter's signed v3 frames (docs/beacon.md, docs/security.md): what a receiver's
/// verifier accepts, signed again every 5 s, T never lower than the last sent, and `both`.
@Suite struct BeaconSignedTransmitterTests {
    static let second: Int64 = 1_000_000
    /// 2026-11-28T08:00:00Z.
    static let t0: Int64 = 1_795_852_800

    final class WallClock: Sendable {
        let micros = Mutex<Int64>(BeaconSignedTransmitterTests.t0 * BeaconSignedTransmitterTests.second)
        func advance(seconds: Int64) { micros.withLock { $0 += seconds * BeaconSignedTransmitterTests.second } }
        var now: Int64 { micros.withLock { $0 } }
    }

    static func make(
        _ version: BeaconFrameVersion = .v3, keyring: VenueKeyring = VenueKeyringTests.keyring, stateDir: String? = nil,
        clock: WallClock = WallClock()
    ) -> (BeaconTransmitter, RecordingAdvertiser, WallClock) {
        var configuration = BeaconTransmitter.Configuration(
            zone: 7, backend: "hci", adapter: "hci0", stateDir: stateDir)
        configuration.frameVersion = version
        configuration.signer = BeaconSigner(keyring: keyring, sourceID: 21)
        let radio = RecordingAdvertiser()
        let transmitter = BeaconTransmitter(
            configuration: configuration, backend: radio, logger: Logger(label: "test"), wallClock: { clock.now })
        return (transmitter, radio, clock)
    }

    static let yellow = BeaconInput.raceControl(mode: .yellowFlag, fresh: true, temperature: 12, problem: nil)

    @Test func itSendsSignedFramesAReceiverAccepts() throws {
        let (transmitter, radio, clock) = Self.make()
        transmitter.update(Self.yellow)
        let frame = try #require(radio.signals.last ?? nil)
        #expect(frame.version == .v3 && frame.mode == .yellowFlag && frame.zone == 7 && frame.temperature == 12)
        #expect(frame.sourceID == 21 && frame.signature?.keyID == 1 && frame.signature?.signedAt == UInt32(Self.t0))
        var receiver = SignedFrameVerifier(
            authenticator: VenueAuthenticator(keyring: VenueKeyringTests.keyring, companyID: 0x1234))
        #expect(receiver.check(frame, at: 0, wallClock: clock.now) == .accepted(age: 0))
        let status = transmitter.status
        #expect(status.frameVersion == "v3" && status.mode == "yellow_flag" && status.signedAt == Int(Self.t0))
        #expect(status.frame == HexText.string(frame.encoded()))
    }

    @Test func itSignsAgainEveryFiveSecondsWithTheSameContent() throws {
        let (transmitter, radio, clock) = Self.make()
        transmitter.update(Self.yellow)
        clock.advance(seconds: 4)
        transmitter.tick()
        #expect(radio.sent.withLock { $0.count } == 1, "a T younger than 5 s stays on the air")
        clock.advance(seconds: 1)
        transmitter.tick()
        let frames = radio.signals.compactMap { $0 }
        #expect(frames.count == 2)
        #expect(frames.last?.signature?.signedAt == UInt32(Self.t0 + 5))
        #expect(frames.last?.sequence == frames.first?.sequence)
        // A change goes out at once, with the next sequence.
        transmitter.update(.raceControl(mode: .redFlag, fresh: true, temperature: 12, problem: nil))
        #expect(radio.signals.last??.mode == .redFlag)
        #expect(radio.signals.last??.sequence == (frames.first?.sequence ?? 0) &+ 1)
    }

    /// The wall clock stepped back (or a restart with a clock behind the last frame): T stays at
    /// the last one sent, which the state directory keeps.
    @Test func tNeverGoesBelowTheLastSent() throws {
        let scratch = ConfigScratch()
        let clock = WallClock()
        do {
            let (transmitter, _, _) = Self.make(stateDir: scratch.directory, clock: clock)
            transmitter.update(Self.yellow)
            clock.advance(seconds: 10)
            transmitter.tick()
            #expect(transmitter.onAir?.signature?.signedAt == UInt32(Self.t0 + 10))
        }
        clock.advance(seconds: -100)
        let (restarted, radio, _) = Self.make(stateDir: scratch.directory, clock: clock)
        restarted.update(Self.yellow)
        #expect(radio.signals.last??.signature?.signedAt == UInt32(Self.t0 + 10))
    }

    @Test func bothSendsV1AndV3InTurn() {
        let (transmitter, radio, _) = Self.make(.both)
        transmitter.update(Self.yellow)
        for _ in 0..<3 { transmitter.tick() }
        let versions = radio.signals.compactMap { $0?.version }
        #expect(versions == [.v3, .v1, .v3, .v1])
        // v1 carries yellow flag as GeoRacing's caution byte; v3 carries it as itself.
        #expect(radio.signals.compactMap { $0?.mode } == [.yellowFlag, .safetyCar, .yellowFlag, .safetyCar])
    }

    @Test func withoutAKeyForTodayItIsSilentAndSaysWhy() {
        var tomorrowOnly = VenueKeyring()
        tomorrowOnly.addDayKey([UInt8](repeating: 7, count: 32), id: 2, day: VenueKeyring.day(of: UInt32(Self.t0)) + 1)
        let (transmitter, radio, _) = Self.make(keyring: tomorrowOnly)
        transmitter.update(Self.yellow)
        #expect(radio.sent.withLock { $0 } == [nil])
        let status = transmitter.status
        #expect(status.state == "silent")
        #expect(status.detail == "no key in the key file signs 2026-11-28")
    }
}

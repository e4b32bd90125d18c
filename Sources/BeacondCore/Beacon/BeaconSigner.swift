import BLEPayload
import CircuitState

/// Which GeoRacing frames the transmitter sends (`beacon.frame_version`, `beacon --frame-version`).
package enum BeaconFrameVersion: String, Hashable, Sendable, CaseIterable {
    /// v1, bit-compatible with GeoRacing's Windows beacon and every GeoRacing app.
    case v1
    /// Signed v3 frames only (docs/security.md): needs a key file.
    case v3
    /// v1 and v3 in turn, a second each: old GeoRacing phones keep working while kiosks move to v3.
    case both

    /// `v1`, `v3` or `both`; `1` and `3` as the versions' numbers.
    package init?(text: String) {
        switch text {
        case "1": self = .v1
        case "3": self = .v3
        default: self.init(rawValue: text)
        }
    }

    /// Whether it sends signed frames, so needs keys.
    package var signs: Bool { self != .v1 }
}

/// Signs the transmitter's frames as v3 (docs/frames.md, "v3"): the v1 frame's zone, sequence, TTL
/// and temperature, every mode by v3's numbers, this transmitter's source id, signed at T with
/// the key of the highest key id that can sign T's day (rotation: add the new id to every kiosk
/// first, then to the transmitters).
package struct BeaconSigner: Hashable, Sendable {
    package var keyring: VenueKeyring
    /// This transmitter's id among the venue's signers: receivers keep each sender's order apart.
    package var sourceID: UInt16
    package var companyID: UInt16

    package init(keyring: VenueKeyring, sourceID: UInt16, companyID: UInt16 = GeoRacingSignal.defaultCompanyID) {
        self.keyring = keyring
        self.sourceID = sourceID
        self.companyID = companyID
    }

    /// The key id that signs on `day`: the highest with a key for it.
    package func keyID(day: UInt32) -> UInt8? {
        (0...15 as ClosedRange<UInt8>).reversed().first { keyring.key(id: $0, day: day) != nil }
    }

    /// `frame` (a v1 circuit frame) as a signed v3 frame of `mode` (a v3 mode byte) at `signedAt`;
    /// nil when no key can sign that day.
    package func sign(_ frame: GeoRacingSignal, mode: UInt8, signedAt: UInt32) -> GeoRacingSignal? {
        guard let keyID = keyID(day: VenueKeyring.day(of: signedAt)) else { return nil }
        let unsigned = GeoRacingSignedFrame(
            keyID: keyID, kind: .circuit, zone: frame.zone, mode: GeoRacingSignedFrame.Mode(rawValue: mode),
            flags: frame.flags, sequence: frame.sequence, ttl: frame.ttl, temperature: frame.temperature ?? 0,
            signedAt: signedAt, sourceID: sourceID)
        return try? keyring.signed(unsigned, companyID: companyID)?.signal()
    }

    /// The v3 mode byte of a track mode: v1's numbers for v1's four, then 4 yellow flag and 5 VSC.
    package static func modeByte(_ mode: TrackMode) -> UInt8 {
        switch mode {
        case .normal: 0
        case .safetyCar: 1
        case .redFlag: 2
        case .evacuation: 3
        case .yellowFlag: 4
        case .vsc: 5
        }
    }
}

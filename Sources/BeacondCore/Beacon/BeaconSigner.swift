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

/// Signs frames as v3 (docs/frames.md, "v3"): a v1 or v2 frame's zone, sequence, TTL and
/// temperature, every mode by v3's numbers, this transmitter's source id, signed at T with the key
/// of `keyID`, or by default of the highest key id that can sign T's day (rotation: add the new id
/// to every kiosk first, then to the transmitters). The transmitter and `example-capture` sign with it.
package struct BeaconSigner: Hashable, Sendable {
    package var keyring: VenueKeyring
    /// This transmitter's id among the venue's signers: receivers keep each sender's order apart.
    package var sourceID: UInt16
    package var companyID: UInt16
    /// The key id to sign with; nil: the highest that can sign the day.
    package var keyID: UInt8?

    package init(
        keyring: VenueKeyring, sourceID: UInt16, companyID: UInt16 = GeoRacingSignal.defaultCompanyID,
        keyID: UInt8? = nil
    ) {
        self.keyring = keyring
        self.sourceID = sourceID
        self.companyID = companyID
        self.keyID = keyID
    }

    /// The key id that signs on `day`.
    package func keyID(day: UInt32) -> UInt8? {
        if let keyID { return keyring.key(id: keyID, day: day) == nil ? nil : keyID }
        return (0...15 as ClosedRange<UInt8>).reversed().first { keyring.key(id: $0, day: day) != nil }
    }

    /// `frame` as a signed v3 frame of `mode` (a v3 mode byte) at `signedAt`: a staff frame for a
    /// v2 one, else a circuit frame; nil when no key can sign that day.
    package func sign(_ frame: GeoRacingSignal, mode: UInt8, signedAt: UInt32) -> GeoRacingSignal? {
        guard let keyID = keyID(day: VenueKeyring.day(of: signedAt)) else { return nil }
        let kind: GeoRacingSignedFrame.Kind = frame.version == .v2 ? .staff : .circuit
        let unsigned = GeoRacingSignedFrame(
            keyID: keyID, kind: kind, zone: frame.zone, mode: GeoRacingSignedFrame.Mode(rawValue: mode),
            flags: frame.flags, sequence: frame.sequence, ttl: frame.ttl, temperature: frame.temperature ?? 0,
            signedAt: signedAt, sourceID: sourceID)
        return try? keyring.signed(unsigned, companyID: companyID)?.signal()
    }
}

import BLEPayload
import CircuitState
import Crypto
import Foundation
import Glibc

/// The venue's keys for GeoRacing v3 frames (docs/security.md), read from a key file.
///
/// A *venue key* (`key ID HEX`) derives one key per UTC day with HKDF-SHA256: the tag of a frame
/// signed at T is made with the key of T's day. A *day key* (`day-key ID YYYY-MM-DD HEX`) is
/// one such derived key alone: a kiosk given only the race weekend's day keys holds nothing
/// that signs on Monday. Key ids are 0–15 (4 bits in the frame).
package struct VenueKeyring: Hashable, Sendable {
    /// 32 bytes of each venue key, by id.
    package private(set) var venueKeys: [UInt8: [UInt8]] = [:]
    /// 32 bytes of each day key, by id and day (days since 1970-01-01, UTC).
    package private(set) var dayKeys: [DayKeyID: [UInt8]] = [:]

    package struct DayKeyID: Hashable, Sendable {
        package var keyID: UInt8
        package var day: UInt32
    }

    package static let keyBytes = 32
    /// HKDF's salt for day keys; the info is the day number, 4 bytes big-endian.
    package static let daySalt: [UInt8] = Array("GeoRacing-v3 day key".utf8)
    static let secondsPerDay: UInt32 = 86_400

    package init() {}

    package var isEmpty: Bool { venueKeys.isEmpty && dayKeys.isEmpty }

    /// The ids of its venue keys and day keys, lowest first.
    package var keyIDs: [UInt8] { Set(venueKeys.keys).union(dayKeys.keys.map(\.keyID)).sorted() }

    /// Why a tag could not be checked or made.
    package enum Refusal: Error, Hashable, Sendable {
        /// No venue key of this id, and no day key of this id for the frame's day.
        case unknownKey
    }

    // MARK: Keys

    package mutating func addVenueKey(_ key: [UInt8], id: UInt8) { venueKeys[id & 0x0F] = key }

    package mutating func addDayKey(_ key: [UInt8], id: UInt8, day: UInt32) {
        dayKeys[DayKeyID(keyID: id & 0x0F, day: day)] = key
    }

    /// The day of a signing time: whole days since 1970-01-01 UTC.
    package static func day(of signedAt: UInt32) -> UInt32 { signedAt / secondsPerDay }

    /// The key that signs frames of `keyID` on `day`: a day key given as such, else derived from
    /// the venue key.
    package func key(id keyID: UInt8, day: UInt32) -> [UInt8]? {
        if let given = dayKeys[DayKeyID(keyID: keyID, day: day)] { return given }
        guard let venueKey = venueKeys[keyID] else { return nil }
        return Self.deriveDayKey(venueKey: venueKey, day: day)
    }

    /// HKDF-SHA256(ikm: venue key, salt: `daySalt`, info: day as 4 bytes big-endian), 32 bytes.
    package static func deriveDayKey(venueKey: [UInt8], day: UInt32) -> [UInt8] {
        let info = [
            UInt8(day >> 24), UInt8(truncatingIfNeeded: day >> 16), UInt8(truncatingIfNeeded: day >> 8),
            UInt8(truncatingIfNeeded: day),
        ]
        let derived = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: venueKey), salt: daySalt, info: info,
            outputByteCount: keyBytes)
        return derived.withUnsafeBytes { Array($0) }
    }

    // MARK: Tags

    /// The 8-byte tag of a frame's signed part: HMAC-SHA256 with the key of its id and day.
    package func tag(of frame: GeoRacingSignedFrame, companyID: UInt16) -> Result<[UInt8], Refusal> {
        guard let key = key(id: frame.keyID, day: Self.day(of: frame.signedAt)) else { return .failure(.unknownKey) }
        return .success(Self.tag(of: frame.signedPart, key: key, companyID: companyID))
    }

    package static func tag(of signedPart: [UInt8], key: [UInt8], companyID: UInt16) -> [UInt8] {
        let message = GeoRacingSignedFrame.message(signedPart: signedPart, companyID: companyID)
        let code = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))
        return Array(code.prefix(GeoRacingSignedFrame.tagLength))
    }

    /// The frame with its tag set; nil without a key for its id and day.
    package func signed(_ frame: GeoRacingSignedFrame, companyID: UInt16) -> GeoRacingSignedFrame? {
        guard case .success(let tag) = tag(of: frame, companyID: companyID) else { return nil }
        var signed = frame
        signed.tag = tag
        return signed
    }

    /// Whether the frame's tag is right, compared in constant time.
    package func verify(_ frame: GeoRacingSignedFrame, companyID: UInt16) -> Result<Bool, Refusal> {
        tag(of: frame, companyID: companyID).map { Self.constantTimeEqual($0, frame.tag) }
    }

    /// True when both hold the same bytes; the time taken depends on the length only.
    package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}

/// Checks v3 tags for the verifier with a keyring, keeping the day keys it derived: a day key is
/// derived once (HKDF), not per frame. At most `cacheLimit` are kept; a forger's random signing
/// times cost a derivation each, never memory.
package struct VenueAuthenticator: FrameAuthenticator {
    static let cacheLimit = 64

    package let keyring: VenueKeyring
    package let companyID: UInt16
    private var dayKeys: [VenueKeyring.DayKeyID: SymmetricKey] = [:]

    package init(keyring: VenueKeyring, companyID: UInt16) {
        self.keyring = keyring
        self.companyID = companyID
    }

    package mutating func check(_ signal: GeoRacingSignal) -> TagCheck {
        guard let frame = GeoRacingSignedFrame(signal), let signature = signal.signature else { return .invalid }
        let id = VenueKeyring.DayKeyID(keyID: frame.keyID, day: VenueKeyring.day(of: frame.signedAt))
        let key: SymmetricKey
        if let cached = dayKeys[id] {
            key = cached
        } else {
            guard let bytes = keyring.key(id: id.keyID, day: id.day) else { return .unknownKey }
            key = SymmetricKey(data: bytes)
            if dayKeys.count >= Self.cacheLimit { dayKeys.removeAll(keepingCapacity: true) }
            dayKeys[id] = key
        }
        let message = GeoRacingSignedFrame.message(signedPart: frame.signedPart, companyID: companyID)
        let code = HMAC<SHA256>.authenticationCode(for: message, using: key)
        let computed = code.withUnsafeBytes { raw in raw.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        // One 64-bit comparison: its time does not depend on where the tags differ.
        return computed ^ signature.tag == 0 ? .valid : .invalid
    }
}

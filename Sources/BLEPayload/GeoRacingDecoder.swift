/// What the GeoRacing decoder found in one report's advertising data.
public enum GeoRacingMatch {
    /// No manufacturer data with the GeoRacing company id.
    case none
    case signal(GeoRacingSignal)
    /// An attendee's phone: claims nothing, counted apart.
    case userBeacon(GeoRacingUserBeacon)
    case rejected(GeoRacingRejection)
}

/// A user beacon from GeoRacing's attendee app (`BeaconAdvertiser.startAdvertising`):
/// `[0x01][uid hash i32]` (5 bytes), or the same plus latitude and longitude as big-endian
/// float32 (13 bytes). It shares version byte 1 with the circuit frame and is told apart by its
/// length. The location belongs to the attendee: it is never decoded or kept, only whether the
/// frame carried one.
public struct GeoRacingUserBeacon: Hashable, Sendable {
    /// Java's `String.hashCode()` of the attendee's account id, as sent.
    public var uidHash: UInt32
    public var carriesLocation: Bool

    public init(uidHash: UInt32, carriesLocation: Bool) {
        self.uidHash = uidHash
        self.carriesLocation = carriesLocation
    }

    /// The user beacon in `payload`, or nil when it is not one.
    public init?(parsing payload: UnsafeRawBufferPointer) {
        guard payload.count == 5 || payload.count == 13, payload[0] == 1 else { return nil }
        uidHash = payload[1...4].reduce(0) { $0 << 8 | UInt32($1) }
        carriesLocation = payload.count == 13
    }

    /// The frame as the attendee app sends it; `location` (latitude, longitude in degrees) makes
    /// the 13-byte form. For tests and test transmitters: beacond never sends one.
    public static func frame(uidHash: UInt32, location: (latitude: Float, longitude: Float)? = nil) -> [UInt8] {
        func be32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        var bytes: [UInt8] = [1] + be32(uidHash)
        if let location {
            bytes += be32(location.latitude.bitPattern) + be32(location.longitude.bitPattern)
        }
        return bytes
    }
}

/// Finds GeoRacing frames in advertising data, for a configurable company id.
public struct GeoRacingDecoder: Sendable {
    public var companyID: UInt16

    public init(companyID: UInt16 = GeoRacingSignal.defaultCompanyID) {
        self.companyID = companyID
    }

    /// The first valid GeoRacing signal in `data`; failing that, the first user beacon; failing
    /// that, the first rejection; failing that, `.none`.
    public func decode(_ data: AdvertisingData) -> GeoRacingMatch {
        var match = GeoRacingMatch.none
        for entry in data.manufacturerData where entry.companyID == companyID {
            do throws(GeoRacingRejection) {
                return .signal(try GeoRacingSignal(parsing: entry.payload))
            } catch {
                switch match {
                case .none, .rejected:
                    if let user = GeoRacingUserBeacon(parsing: entry.payload) {
                        match = .userBeacon(user)
                    } else if case .none = match {
                        match = .rejected(error)
                    }
                case .userBeacon, .signal:
                    break
                }
            }
        }
        return match
    }
}

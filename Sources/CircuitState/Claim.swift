import BLEPayload

/// What one accepted frame asserts for its key: mode, zone, sequence, RSSI and expiry.
struct Claim: Sendable {
    var mode: TrackMode
    var signal: GeoRacingSignal
    var rssi: Int8?
    var receivedAt: Int64
    /// When the claim lapses (exclusive).
    var expiresAt: Int64
    /// The reception time and TTL its expiry derives from: its own, or, for a held or contested
    /// claim merged with another of its mode, the one that expires later. A reconfiguration
    /// recomputes the expiry from it.
    var lifetimeStart: Int64
    var lifetimeTTL: UInt8
    /// For a held claim: the reception time of the frame that lowered or cleared it.
    var heldSince: Int64?

    /// `age`: a signed frame's age on its sender's clock when heard; its lifetime counts from its signing.
    init(mode: TrackMode, signal: GeoRacingSignal, rssi: Int8?, receivedAt: Int64, age: Int64 = 0, expiresAt: Int64) {
        self.mode = mode
        self.signal = signal
        self.rssi = rssi
        self.receivedAt = receivedAt
        self.expiresAt = expiresAt
        lifetimeStart = receivedAt.subtractingSaturating(age)
        lifetimeTTL = signal.ttl
    }

    var severity: Int { mode.severity }

    var summary: ClaimSummary {
        ClaimSummary(
            mode: mode, sequence: signal.sequence, zone: signal.zone, receivedAt: receivedAt,
            expiresAt: expiresAt, signed: signal.isSigned)
    }
}

/// A key's claims: the claim in force (the latest accepted frame's), held claims (claims a newer
/// frame replaced while they still asserted more, kept for the de-escalation hold) and contested
/// claims (older-sequence frames that assert more than the claim in force, now or after it lapses).
/// Held and contested claims keep at most one claim per mode, so a short claim of one mode never
/// displaces a longer claim of another: each lapses only by its own expiry.
struct ClaimSet: Sendable {
    var inForce: Claim?
    var held: [Claim] = []
    var contested: [Claim] = []

    /// The claim the key publishes at `time`: the most severe of those in force at `time`; on ties
    /// a signed claim, then the claim in force, then a held one, then a contested one.
    func published(at time: Int64) -> Claim? {
        if held.isEmpty && contested.isEmpty {
            guard let inForce, inForce.expiresAt > time else { return nil }
            return inForce
        }
        var best: Claim?
        Self.consider(inForce, at: time, best: &best)
        for claim in held { Self.consider(claim, at: time, best: &best) }
        for claim in contested { Self.consider(claim, at: time, best: &best) }
        return best
    }

    /// The most severe held claim in force at `time`.
    func mostSevereHeld(at time: Int64) -> Claim? {
        var best: Claim?
        for claim in held { Self.consider(claim, at: time, best: &best) }
        return best
    }

    /// The most severe contested claim in force at `time`.
    func mostSevereContested(at time: Int64) -> Claim? {
        var best: Claim?
        for claim in contested { Self.consider(claim, at: time, best: &best) }
        return best
    }

    /// The earliest expiry among the claims: the key's next deadline.
    var nextExpiry: Int64? {
        var next = inForce?.expiresAt
        if held.isEmpty && contested.isEmpty { return next }
        for claim in held where next.map({ claim.expiresAt < $0 }) ?? true { next = claim.expiresAt }
        for claim in contested where next.map({ claim.expiresAt < $0 }) ?? true { next = claim.expiresAt }
        return next
    }

    /// Drops the claims that have lapsed at `time`.
    mutating func removeExpired(at time: Int64) {
        if let claim = inForce, claim.expiresAt <= time { inForce = nil }
        if !held.isEmpty { held.removeAll { $0.expiresAt <= time } }
        if !contested.isEmpty { contested.removeAll { $0.expiresAt <= time } }
    }

    /// Replaces each claim's expiry with `transform`'s, or drops the claim where it gives nil.
    mutating func revise(_ transform: (Claim) -> Int64?) {
        inForce = inForce.flatMap { Self.revised($0, transform) }
        held = held.compactMap { Self.revised($0, transform) }
        contested = contested.compactMap { Self.revised($0, transform) }
    }

    /// Keeps `replaced` (the claim in force that a newer frame replaced at `time`) as a held claim
    /// until `holdUntil` at the latest.
    mutating func hold(_ replaced: Claim, at time: Int64, until holdUntil: Int64) {
        var claim = replaced
        claim.heldSince = time
        claim.expiresAt = min(claim.expiresAt, holdUntil)
        Self.merge(claim, into: &held)
    }

    /// Adds an older-sequence claim; returns whether the key had no contested claim before.
    mutating func contest(_ claim: Claim) -> Bool {
        let started = contested.isEmpty
        Self.merge(claim, into: &contested)
        return started
    }

    /// Puts `claim` in the slot of its mode. An earlier claim of that mode gives way to it, but
    /// the later expiry (and what it derives from) stays: a short frame never cuts a claim short.
    private static func merge(_ claim: Claim, into claims: inout [Claim]) {
        guard let index = claims.firstIndex(where: { $0.severity == claim.severity }) else {
            claims.append(claim)
            return
        }
        let earlier = claims[index]
        var merged = claim
        if earlier.expiresAt > claim.expiresAt {
            merged.expiresAt = earlier.expiresAt
            merged.lifetimeStart = earlier.lifetimeStart
            merged.lifetimeTTL = earlier.lifetimeTTL
            merged.heldSince = earlier.heldSince
        }
        claims[index] = merged
    }

    private static func revised(_ claim: Claim, _ transform: (Claim) -> Int64?) -> Claim? {
        guard let expiry = transform(claim) else { return nil }
        var revised = claim
        revised.expiresAt = expiry
        return revised
    }

    private static func consider(_ claim: Claim?, at time: Int64, best: inout Claim?) {
        guard let claim, claim.expiresAt > time else { return }
        if let current = best {
            if current.severity > claim.severity { return }
            if current.severity == claim.severity && (current.signal.isSigned || !claim.signal.isSigned) { return }
        }
        best = claim
    }
}

/// One claim of a key, as status and beacon messages show it.
public struct ClaimSummary: Hashable, Sendable {
    public var mode: TrackMode
    public var sequence: UInt16
    public var zone: UInt16
    public var receivedAt: Int64
    public var expiresAt: Int64
    /// A verified v3 frame's claim.
    public var signed: Bool

    public init(
        mode: TrackMode, sequence: UInt16, zone: UInt16, receivedAt: Int64, expiresAt: Int64, signed: Bool = false
    ) {
        self.mode = mode
        self.sequence = sequence
        self.zone = zone
        self.receivedAt = receivedAt
        self.expiresAt = expiresAt
        self.signed = signed
    }
}

import BLEPayload

/// Why a v3 frame did not count (docs/security.md, "Signed frames"). Each reason has a counter.
public enum SignatureRejection: String, Hashable, Sendable, CaseIterable {
    /// No key of the frame's key id for its day, or no key file at all.
    case unknownKey = "unknown_key"
    /// The tag is wrong: forged, damaged, or signed with another venue's key.
    case badTag = "bad_tag"
    /// The signing time lies outside the receiver's clock ± the clock window.
    case clockWindow = "clock_window"
    /// (signing time, sequence) is below the highest accepted from its sender: an old frame again.
    case replayed
    /// Older than its TTL, measured on its sender's clock.
    case expired
}

/// What checking a v3 frame's tag found.
public enum TagCheck: Hashable, Sendable {
    case valid
    case invalid
    case unknownKey
}

/// Checks v3 tags. The daemon's keyring implements it: the keys and the HMAC stay out of the engine.
public protocol FrameAuthenticator: Sendable {
    /// Checks the tag of `signal`, a v3 signal. Mutating: an authenticator may keep derived keys.
    mutating func check(_ signal: GeoRacingSignal) -> TagCheck
}

/// The sender a v3 frame's order is kept for: its kind, source id and zone, all of them signed.
public struct SignedSource: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The frame's kind: 0 circuit, 1 staff.
    public var kind: UInt8
    public var sourceID: UInt16
    public var zone: UInt16

    public init(kind: UInt8, sourceID: UInt16, zone: UInt16) {
        self.kind = kind
        self.sourceID = sourceID
        self.zone = zone
    }

    /// The sender of a v3 signal; nil for any other.
    public init?(_ signal: GeoRacingSignal) {
        guard let signature = signal.signature else { return nil }
        self.init(
            kind: signature.kind.rawValue, sourceID: UInt16(truncatingIfNeeded: signal.sourceID ?? 0), zone: signal.zone
        )
    }

    /// `circuit 3 zone 7`, `staff 12 zone 4`.
    public var description: String { "\(kind == 1 ? "staff" : "circuit") \(sourceID) zone \(zone)" }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.kind, lhs.sourceID, lhs.zone) < (rhs.kind, rhs.sourceID, rhs.zone)
    }
}

/// (signing time, sequence): the order of one sender's frames. A sender never goes back in it.
public struct SignedOrder: Hashable, Sendable, Comparable {
    public var signedAt: UInt32
    public var sequence: UInt16

    public init(signedAt: UInt32, sequence: UInt16) {
        self.signedAt = signedAt
        self.sequence = sequence
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.signedAt, lhs.sequence) < (rhs.signedAt, rhs.sequence)
    }
}

/// The counts of `SignedFrameVerifier`.
public struct SignatureCounters: Hashable, Sendable {
    public var accepted = 0
    /// Tags computed (a frame whose bytes differ from its sender's last verified one).
    public var tagsComputed = 0
    /// Repeats of a sender's last verified bytes: a comparison, no HMAC.
    public var tagsReused = 0
    public var rejected: [SignatureRejection: Int] = [:]
    /// Senders forgotten to stay within the table's bound (least recently accepted first).
    public var evictedSources = 0
    /// Marks loaded further ahead than the clock allows, and clamped.
    public var clampedMarks = 0

    public init() {}

    public func rejected(_ reason: SignatureRejection) -> Int { rejected[reason, default: 0] }
}

/// Checks v3 frames before the engine sees them: the signing time against the receiver's clock,
/// the tag, the sender's order, and the frame's age on the sender's own clock (docs/security.md).
/// The window comes first because it is free: a flood of frames with made-up signing times costs
/// no key derivation and no HMAC.
///
/// Two clocks are injected: engine time (CLOCK_BOOTTIME live, capture time in replay), on which
/// ages are measured, and the receiver's wall clock (capture time in replay), against which only
/// the clock window is judged. A wall-clock step therefore moves the window, never an age.
///
/// Senders exist only once a frame of theirs passed every check, so a forger cannot fill the table;
/// it is bounded all the same.
public struct SignedFrameVerifier: Sendable {
    public static let defaultClockWindow: Int64 = 30_000_000
    public static let defaultSourceLimit = 4096
    /// A clock-offset sample counts for one to two of these.
    static let offsetBucket: Int64 = 30_000_000

    /// Checks tags; nil (no key file): every v3 frame is `unknownKey`.
    public var authenticator: (any FrameAuthenticator)?
    /// How far a frame's signing time may lie from the receiver's wall clock, µs.
    public var clockWindow: Int64
    public let sourceLimit: Int
    private var sources: [SignedSource: SenderRecord] = [:]
    public private(set) var counters = SignatureCounters()
    /// Whether a mark moved since `marksSaved()`: the daemon persists them then.
    public private(set) var marksChanged = false

    /// What became of a signal.
    public enum Verdict: Hashable, Sendable {
        /// Not a v3 frame: nothing to verify.
        case unsigned
        /// It counts; `age` is its age on its sender's clock, µs.
        case accepted(age: Int64)
        case rejected(SignatureRejection)
    }

    /// One sender as last accepted.
    public struct Sender: Hashable, Sendable {
        public var source: SignedSource
        public var mark: SignedOrder
        /// The receiver's wall clock minus the sender's, µs, at its last accepted frame; nil for a
        /// mark restored from the state directory and not heard since.
        public var clockOffset: Int64?
        /// Engine time of its last accepted frame; nil as for `clockOffset`.
        public var lastAccepted: Int64?
    }

    private struct SenderRecord: Sendable {
        var mark: SignedOrder
        /// Its last frame whose tag was computed and right.
        var lastVerified: GeoRacingSignal?
        var clock = SenderClock()
        var clockOffset: Int64?
        var lastAccepted: Int64?
    }

    public init(
        authenticator: (any FrameAuthenticator)?, clockWindow: Int64 = defaultClockWindow,
        sourceLimit: Int = defaultSourceLimit
    ) {
        self.authenticator = authenticator
        self.clockWindow = max(0, clockWindow)
        self.sourceLimit = max(1, sourceLimit)
    }

    /// Checks `signal`, heard at engine time `now` while the receiver's wall clock read `wallClock`
    /// (µs since 1970).
    public mutating func check(_ signal: GeoRacingSignal, at now: Int64, wallClock: Int64) -> Verdict {
        guard let signature = signal.signature, let source = SignedSource(signal) else { return .unsigned }
        let signedAt = Int64(signature.signedAt) * 1_000_000
        // T is whole seconds: the frame was signed within [T, T + 1 s).
        if wallClock < signedAt.subtractingSaturating(clockWindow)
            || wallClock >= signedAt.addingSaturating(1_000_000 + clockWindow)
        {
            return reject(.clockWindow)
        }
        if let rejection = checkTag(signal, source: source) { return reject(rejection) }
        let order = SignedOrder(signedAt: signature.signedAt, sequence: signal.sequence)
        var record = sources[source] ?? SenderRecord(mark: order)
        if order < record.mark { return reject(.replayed) }
        // The sender's clock, read against engine time: the smallest recent offset is the least delayed frame.
        let sample = now.subtractingSaturating(signedAt)
        let age = max(0, sample.subtractingSaturating(record.clock.estimate(at: now) ?? sample))
        if signal.ttl > 0 && age >= Int64(signal.ttl) * 1_000_000 { return reject(.expired) }

        if sources[source] == nil { makeRoom() }
        if order > record.mark || sources[source] == nil { marksChanged = true }
        record.mark = max(record.mark, order)
        record.lastVerified = signal
        record.clock.record(sample, at: now)
        let estimate = record.clock.estimate(at: now) ?? sample
        record.clockOffset = wallClock.subtractingSaturating(now.subtractingSaturating(estimate))
        record.lastAccepted = now
        sources[source] = record
        counters.accepted += 1
        return .accepted(age: age)
    }

    /// nil when the tag is right: reused when the bytes are the sender's last verified ones.
    private mutating func checkTag(_ signal: GeoRacingSignal, source: SignedSource) -> SignatureRejection? {
        if let verified = sources[source]?.lastVerified, verified == signal {
            counters.tagsReused += 1
            return nil
        }
        guard authenticator != nil else { return .unknownKey }
        counters.tagsComputed += 1
        switch authenticator?.check(signal) ?? .unknownKey {
        case .valid:
            sources[source]?.lastVerified = signal
            return nil
        case .invalid: return .badTag
        case .unknownKey: return .unknownKey
        }
    }

    private mutating func reject(_ reason: SignatureRejection) -> Verdict {
        counters.rejected[reason, default: 0] += 1
        return .rejected(reason)
    }

    /// Forgets the least recently accepted sender when the table is full.
    private mutating func makeRoom() {
        guard sources.count >= sourceLimit else { return }
        let victim = sources.min { ($0.value.lastAccepted ?? .min) < ($1.value.lastAccepted ?? .min) }
        if let victim {
            sources[victim.key] = nil
            counters.evictedSources += 1
        }
    }

    // MARK: Marks across restarts

    /// Every sender's mark: what the state directory keeps.
    public var marks: [SignedSource: SignedOrder] { sources.mapValues(\.mark) }

    /// The senders, in `SignedSource` order.
    public var senders: [Sender] {
        sources.sorted { $0.key < $1.key }.map { source, record in
            Sender(
                source: source, mark: record.mark, clockOffset: record.clockOffset, lastAccepted: record.lastAccepted)
        }
    }

    /// Takes note that the marks as they stand are saved.
    public mutating func marksSaved() { marksChanged = false }

    /// Restores marks saved before a restart. A mark further ahead than the wall clock plus the
    /// window (a clock that once ran fast) is clamped to it, so it cannot lock a genuine sender out
    /// for longer than the window. A mark already held that is higher stays.
    public mutating func restore(_ marks: [SignedSource: SignedOrder], wallClock: Int64) {
        let limitMicros = max(0, wallClock.addingSaturating(clockWindow)) / 1_000_000
        let limit = UInt32(clamping: limitMicros)
        for (source, saved) in marks {
            var mark = saved
            if mark.signedAt > limit {
                mark = SignedOrder(signedAt: limit, sequence: 0)
                counters.clampedMarks += 1
            }
            if sources[source] == nil {
                guard sources.count < sourceLimit else { continue }
                sources[source] = SenderRecord(mark: mark)
            } else if let held = sources[source]?.mark, mark > held {
                sources[source]?.mark = mark
            }
        }
    }
}

/// One sender's clock against engine time: the smallest (engine time − signing time) of its
/// accepted frames over the last 30 to 60 s. The least delayed frame shows the sender's clock best;
/// forgetting old samples lets the estimate follow a sender whose clock was stepped back.
struct SenderClock: Sendable {
    private var bucketStart: Int64?
    private var current = Int64.max
    private var previous = Int64.max

    /// The offset in force at `now`; nil when no sample is recent.
    func estimate(at now: Int64) -> Int64? {
        guard let bucketStart else { return nil }
        let elapsed = now.subtractingSaturating(bucketStart)
        let bucket = SignedFrameVerifier.offsetBucket
        if elapsed < bucket { return min(current, previous) }
        if elapsed < 2 * bucket { return current }
        return nil
    }

    mutating func record(_ sample: Int64, at now: Int64) {
        let bucket = SignedFrameVerifier.offsetBucket
        guard let start = bucketStart, now.subtractingSaturating(start) < 2 * bucket else {
            (bucketStart, current, previous) = (now, sample, .max)
            return
        }
        if now.subtractingSaturating(start) >= bucket {
            (bucketStart, previous, current) = (now, current, sample)
        } else {
            current = min(current, sample)
        }
    }
}

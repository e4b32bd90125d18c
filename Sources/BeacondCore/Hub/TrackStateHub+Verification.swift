import BLEPayload
import CircuitState
import Logging

/// v3 frames in the hub (docs/security.md): each is checked by the verifier before the engine
/// sees it, and spoofing is logged, rate-limited per key.
extension TrackStateHub {
    /// Senders listed in `status.signed`; the rest are counted.
    static let signedSenderListLimit = 256

    /// Checks a v3 signal heard at `now`. A forged one (a wrong tag) is logged at warning level,
    /// at most once a minute per key; keys are the attacker's choice, so the limiter is bounded.
    func verify(_ signal: GeoRacingSignal, address: BluetoothAddress, at now: Int64) -> SignedFrameVerifier.Verdict {
        let verdict = verifier.check(signal, at: now, wallClock: clock.wallMicros(at: now))
        if case .rejected(.badTag) = verdict {
            let key = OverrideKey(signal: signal, address: address)
            if forgeryWarnings.shouldWarn(key, at: now) {
                logger.warning("forged frame: \(key), bad tag (key id \(signal.signature?.keyID ?? 0))")
            }
        }
        return verdict
    }

    /// What checks v3 tags (nil: no key file, every v3 frame is `unknown_key`) and the clock
    /// window; the senders' marks stay. A reload calls it with the key file read again.
    package func setVerification(authenticator: (any FrameAuthenticator)?, clockWindow: Int64) {
        eventLoop.preconditionInEventLoop()
        verifier.authenticator = authenticator
        verifier.clockWindow = max(0, clockWindow)
    }

    /// The verifier's counts; on the loop.
    package var signatureCounters: SignatureCounters {
        eventLoop.preconditionInEventLoop()
        return verifier.counters
    }

    /// The senders' marks saved before a restart (clamped to the wall clock plus the window).
    func restoreSignedMarks(_ marks: [SignedSource: SignedOrder], wallClock: Int64) {
        eventLoop.preconditionInEventLoop()
        verifier.restore(marks, wallClock: wallClock)
    }

    /// The marks, when one moved since the last call: what the state directory gets.
    func signedMarksToSave() -> [SignedSource: SignedOrder]? {
        eventLoop.preconditionInEventLoop()
        guard verifier.marksChanged else { return nil }
        verifier.marksSaved()
        return verifier.marks
    }

    /// `status.signed`: the verifier's counts and senders (the daemon adds the key file's part).
    func signedStatus(at now: Int64) -> SignedFramesStatus {
        let counters = verifier.counters
        let fusion = engine.counters
        let senders = verifier.senders
        let listed = senders.prefix(Self.signedSenderListLimit).map { sender in
            SignedSenderReport(
                source: sender.source.description, signedAt: Int(sender.mark.signedAt),
                sequence: Int(sender.mark.sequence),
                clockOffset: sender.clockOffset.map { Double($0) / 1_000_000 },
                lastAccepted: sender.lastAccepted.map { max(0, Double(now) - Double($0)) / 1_000_000 })
        }
        var rejected: [String: Int] = [:]
        for reason in SignatureRejection.allCases { rejected[reason.rawValue] = counters.rejected(reason) }
        return SignedFramesStatus(
            unsigned: configuration.unsignedFrames.rawValue, clockWindow: Double(verifier.clockWindow) / 1_000_000,
            accepted: counters.accepted, tagsComputed: counters.tagsComputed, tagsReused: counters.tagsReused,
            rejected: rejected, belowSigned: fusion.belowSigned, unsignedRejected: fusion.filteredUnsigned,
            sendersEvicted: counters.evictedSources, marksClamped: counters.clampedMarks,
            warningsSuppressed: forgeryWarnings.suppressed, senders: Array(listed),
            sendersOmitted: max(0, senders.count - listed.count))
    }

    /// A key's first contest is logged at warning level, at most once per key per minute.
    func warnOfContest(_ key: OverrideKey, at now: Int64) {
        guard spoofWarnings.shouldWarn(key, at: now),
            let override = activeOverride(for: key, at: now),
            let contested = override.contestedClaim
        else { return }
        var heard = "\(contested.sequence) (\(contested.mode.rawValue))"
        if let inForce = override.claimInForce {
            heard += " and \(inForce.sequence) (\(inForce.mode.rawValue))"
        }
        logger.warning("possible spoofing: \(key) heard with sequences \(heard)")
    }
}

/// `status.signed` (docs/protocol.md, "signed"): GeoRacing v3 frames as the daemon verifies them
/// (docs/security.md): what counts, how many passed and failed each check, and each sender with
/// its order mark and clock offset.
package struct SignedFramesStatus: Hashable, Sendable, Decodable {
    /// The key file in force (`security.key_file`); nil without one: every v3 frame is `unknown_key`.
    package var keyFile: String?
    /// The key ids it holds, venue keys and day keys alike.
    package var keyIDs: [Int]
    /// `accept` or `reject` (`security.unsigned`).
    package var unsigned: String
    package var clockWindow: Double
    package var accepted: Int
    /// Frames whose tag was computed: the first of a sender's new bytes.
    package var tagsComputed: Int
    /// Repeats of a sender's last verified bytes: compared, not computed.
    package var tagsReused: Int
    /// Every rejection reason (`unknown_key`, `bad_tag`, `clock_window`, `replayed`, `expired`)
    /// with its count.
    package var rejected: [String: Int]
    /// Unsigned frames that would have lowered or cleared a signed claim.
    package var belowSigned: Int
    /// Unsigned frames not fused because `security.unsigned` is `reject`.
    package var unsignedRejected: Int
    package var sendersEvicted: Int
    /// Marks loaded from the state directory further ahead than the clock allows.
    package var marksClamped: Int
    /// Forged-frame warnings not logged (one per sender a minute).
    package var warningsSuppressed: Int
    package var senders: [SignedSenderReport]
    package var sendersOmitted: Int

    enum CodingKeys: String, CodingKey {
        case keyFile = "key_file"
        case keyIDs = "key_ids"
        case unsigned
        case clockWindow = "clock_window_s"
        case accepted
        case tagsComputed = "tags_computed"
        case tagsReused = "tags_reused"
        case rejected
        case belowSigned = "below_signed"
        case unsignedRejected = "unsigned_rejected"
        case sendersEvicted = "senders_evicted"
        case marksClamped = "marks_clamped"
        case warningsSuppressed = "warnings_suppressed"
        case senders
        case sendersOmitted = "senders_omitted"
    }

    package init(
        unsigned: String, clockWindow: Double, accepted: Int, tagsComputed: Int, tagsReused: Int,
        rejected: [String: Int], belowSigned: Int, unsignedRejected: Int, sendersEvicted: Int, marksClamped: Int,
        warningsSuppressed: Int, senders: [SignedSenderReport], sendersOmitted: Int
    ) {
        keyFile = nil
        keyIDs = []
        self.unsigned = unsigned
        self.clockWindow = clockWindow
        self.accepted = accepted
        self.tagsComputed = tagsComputed
        self.tagsReused = tagsReused
        self.rejected = rejected
        self.belowSigned = belowSigned
        self.unsignedRejected = unsignedRejected
        self.sendersEvicted = sendersEvicted
        self.marksClamped = marksClamped
        self.warningsSuppressed = warningsSuppressed
        self.senders = senders
        self.sendersOmitted = sendersOmitted
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("key_file"); writer.string(orNull: keyFile)
        writer.key("key_ids")
        writer.beginArray()
        for id in keyIDs { writer.int(id) }
        writer.endArray()
        writer.key("unsigned"); writer.string(unsigned)
        writer.key("clock_window_s"); writer.number(clockWindow, decimals: 3)
        writer.key("accepted"); writer.int(accepted)
        writer.key("tags_computed"); writer.int(tagsComputed)
        writer.key("tags_reused"); writer.int(tagsReused)
        writer.key("rejected")
        writer.beginObject()
        for reason in rejected.keys.sorted() { writer.key(reason); writer.int(rejected[reason] ?? 0) }
        writer.endObject()
        writer.key("below_signed"); writer.int(belowSigned)
        writer.key("unsigned_rejected"); writer.int(unsignedRejected)
        writer.key("senders_evicted"); writer.int(sendersEvicted)
        writer.key("marks_clamped"); writer.int(marksClamped)
        writer.key("warnings_suppressed"); writer.int(warningsSuppressed)
        writer.key("senders")
        writer.beginArray()
        for sender in senders { sender.render(into: &writer) }
        writer.endArray()
        writer.key("senders_omitted"); writer.int(sendersOmitted)
        writer.endObject()
    }
}

/// One v3 sender in `status.signed.senders`.
package struct SignedSenderReport: Hashable, Sendable, Decodable {
    /// `circuit 3 zone 7`: kind, source id, zone.
    package var source: String
    /// Its order mark: the highest (signing time, sequence) accepted.
    package var signedAt: Int
    package var sequence: Int
    /// The receiver's wall clock minus the sender's, seconds; nil for a mark restored from the
    /// state directory and not heard since.
    package var clockOffset: Double?
    /// Seconds since its last accepted frame; nil as for `clockOffset`.
    package var lastAccepted: Double?

    enum CodingKeys: String, CodingKey {
        case source
        case signedAt = "signed_at"
        case sequence = "seq"
        case clockOffset = "clock_offset_s"
        case lastAccepted = "last_accepted_s"
    }

    package init(source: String, signedAt: Int, sequence: Int, clockOffset: Double?, lastAccepted: Double?) {
        self.source = source
        self.signedAt = signedAt
        self.sequence = sequence
        self.clockOffset = clockOffset
        self.lastAccepted = lastAccepted
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("source"); writer.string(source)
        writer.key("signed_at"); writer.int(signedAt)
        writer.key("seq"); writer.int(sequence)
        writer.key("clock_offset_s"); writer.number(orNull: clockOffset, decimals: 3)
        writer.key("last_accepted_s"); writer.number(orNull: lastAccepted, decimals: 3)
        writer.endObject()
    }
}

import BLEPayload

/// How a frame's 16-bit sequence number relates to the one on record, in serial number
/// arithmetic: the difference modulo 65536 decides, so 0 follows 65535.
public enum SequenceOrder: Hashable, Sendable {
    case repeated
    case newer
    case older

    public init(new: UInt16, current: UInt16) {
        let difference = new &- current
        if difference == 0 {
            self = .repeated
        } else if difference < 0x8000 {
            self = .newer
        } else {
            self = .older
        }
    }
}

/// How a frame relates to the claim in force of its key. Unsigned frames compare their sequence
/// numbers (`SequenceOrder`). Signed ones compare (signing time, sequence), the order the verifier
/// holds each sender to, so a transmitter that restarts its sequence with a later time is newer.
/// A signed frame is newer than any unsigned claim: a spoofer's high sequence number must not hold
/// it off. (An unsigned frame against a signed claim never gets here: see `FusionEngine`.)
enum ClaimOrder {
    static func of(new: GeoRacingSignal, current: GeoRacingSignal) -> SequenceOrder {
        guard let signature = new.signature else { return SequenceOrder(new: new.sequence, current: current.sequence) }
        guard let held = current.signature else { return .newer }
        let newOrder = (signature.signedAt, new.sequence)
        let heldOrder = (held.signedAt, current.sequence)
        if newOrder == heldOrder { return .repeated }
        return newOrder > heldOrder ? .newer : .older
    }
}

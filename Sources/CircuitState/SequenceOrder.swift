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

import Glibc

/// A capture that cannot be read further: what went wrong, in which file,
/// at which record and byte offset. Everything before `recordIndex` was read.
public struct CaptureError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable {
        case cannotOpen(errno: Int32)
        /// The path names a FIFO, a device, a directory: refused unread (`RegularFile`).
        case notRegularFile(RegularFile.Kind)
        case readFailed(errno: Int32)
        case badMagic
        case unsupportedVersion(UInt32)
        case unknownLinkType(UInt32)
        /// The file ends inside a header or record.
        case truncated(needed: Int, available: Int)
        /// A length no real record has.
        case absurdLength(Int)
        /// A pcapng block whose structure does not hold together.
        case badBlock(String)
        /// A record time that is not Int64 microseconds since the Unix epoch (what it was, in the
        /// file's own units), or a pcap fraction of a second that is not below one second.
        case timestampOutOfRange(String)
    }

    public var file: String
    /// 0-based index of the record (pcapng: block) being read; -1 for the file header.
    public var recordIndex: Int
    /// File offset of the header or record being read.
    public var offset: Int64
    public var kind: Kind

    public init(file: String, recordIndex: Int, offset: Int64, kind: Kind) {
        self.file = file
        self.recordIndex = recordIndex
        self.offset = offset
        self.kind = kind
    }

    public var description: String {
        let place = recordIndex < 0 ? "file header" : "record \(recordIndex)"
        return "\(file): \(place) at byte \(offset): \(reason)"
    }

    public var reason: String {
        switch kind {
        case .cannotOpen(let code): "cannot open: \(errnoDescription(code))"
        case .notRegularFile(let kind): RegularFile.OpenError.notRegular(kind).description
        case .readFailed(let code): "read failed: \(errnoDescription(code))"
        case .badMagic: "not a btsnoop, pcap or pcapng capture (bad magic)"
        case .unsupportedVersion(let version): "unsupported format version \(version)"
        case .unknownLinkType(let type): "unknown link type \(type)"
        case .truncated(let needed, let available):
            "truncated: needs \(needed) bytes, the file has \(available) left"
        case .absurdLength(let length): "absurd length \(length)"
        case .badBlock(let what): "bad block: \(what)"
        case .timestampOutOfRange(let what): "timestamp out of range: \(what)"
        }
    }
}

func errnoDescription(_ code: Int32) -> String {
    guard let text = strerror(code) else { return "errno \(code)" }
    return String(cString: text)
}

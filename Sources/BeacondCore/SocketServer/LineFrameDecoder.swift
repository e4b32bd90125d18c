import NIOCore

/// One inbound line of protocol v1, or the news that a line was too long.
enum InboundLine: Equatable {
    /// The line's bytes, without the "\n" (and without a "\r" before it).
    case line(ByteBuffer)
    /// A line longer than the limit: its bytes were discarded up to its "\n".
    case tooLong
}

/// Splits the inbound byte stream at "\n". A line may be at most `maxLength` bytes (the "\n"
/// excluded, and a "\r" before it); a longer one is reported once as `.tooLong` and discarded up to its end, so the
/// stream stays in step. Never buffers more than `maxLength` bytes of one line.
struct LineFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = InboundLine

    static let defaultMaxLength = 4096

    let maxLength: Int
    /// Inside a too-long line: skip bytes until its "\n".
    private var discarding = false
    /// How many readable bytes were already searched for "\n" (not searched again).
    private var scanned = 0

    init(maxLength: Int = LineFrameDecoder.defaultMaxLength) {
        self.maxLength = maxLength
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let frame = nextFrame(&buffer) else { return .needMoreData }
        if let frame { context.fireChannelRead(wrapInboundOut(frame)) }
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
        -> DecodingState
    {
        // An unterminated last line is not a command: nobody is left to answer it.
        while let frame = nextFrame(&buffer) {
            if let frame { context.fireChannelRead(wrapInboundOut(frame)) }
        }
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }

    /// The next frame: nil when more data is needed; `.some(nil)` when bytes were consumed
    /// without a frame to pass on (the end of a discarded line).
    mutating func nextFrame(_ buffer: inout ByteBuffer) -> InboundLine?? {
        let view = buffer.readableBytesView
        let searchFrom = view.index(view.startIndex, offsetBy: min(scanned, view.count))
        guard let newline = view[searchFrom...].firstIndex(of: UInt8(ascii: "\n")) else {
            if discarding {
                buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
                scanned = 0
                return nil
            }
            // (+ 1: a line of exactly `maxLength` bytes may still be followed by "\r\n".)
            if buffer.readableBytes > maxLength + 1 {
                buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
                scanned = 0
                discarding = true
                return .some(.tooLong)
            }
            scanned = buffer.readableBytes
            return nil
        }
        scanned = 0
        let length = newline - view.startIndex
        if discarding {
            discarding = false
            buffer.moveReaderIndex(forwardBy: length + 1)
            return .some(nil)
        }
        guard var line = buffer.readSlice(length: length) else { return nil }
        buffer.moveReaderIndex(forwardBy: 1)
        if line.readableBytesView.last == UInt8(ascii: "\r") {
            line.moveWriterIndex(to: line.writerIndex - 1)
        }
        if line.readableBytes > maxLength { return .some(.tooLong) }
        return .some(.line(line))
    }
}

// Target `socket-requests`: the socket protocol's request lines, compiled with LineFrameDecoder
// and ClientRequest only, over the NIOCore of the debug build (Fuzz/run.sh). The input is a
// client's byte stream, delivered in chunks whose sizes the input picks; then:
// - the lines (and too-long notices) are the same whatever the chunk boundaries, and no line
//   is longer than the limit;
// - every line parses to a request or an error reason (never a trap), and a valid request's own
//   command line parses back to it.
import BLEPayload
import NIOCore

private func frames(_ stream: [UInt8], chunks: [Int], maxLength: Int) -> [InboundLine] {
    var decoder = LineFrameDecoder(maxLength: maxLength)
    var buffer = ByteBufferAllocator().buffer(capacity: 0)
    var lines: [InboundLine] = []
    var offset = 0
    var chunkIndex = 0
    while offset < stream.count {
        let size = chunks.isEmpty ? stream.count : max(1, chunks[chunkIndex % chunks.count])
        chunkIndex += 1
        let end = min(stream.count, offset + size)
        buffer.writeBytes(stream[offset..<end])
        offset = end
        while let frame = decoder.nextFrame(&buffer) {
            if let frame { lines.append(frame) }
        }
        buffer.discardReadBytes()
        fuzzCheck(buffer.readableBytes <= maxLength + 2, "\(buffer.readableBytes) bytes buffered, limit \(maxLength)")
    }
    return lines
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSocketRequests(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let maxLength = 16 + Int(input.u8())
    let chunks = input.take(Int(input.u8() % 8)).map(Int.init)
    let stream = input.rest()
    let whole = frames(stream, chunks: [], maxLength: maxLength)
    let chunked = frames(stream, chunks: chunks, maxLength: maxLength)
    fuzzCheck(whole == chunked, "chunks \(chunks) give \(chunked.count) frames, the whole stream \(whole.count)")
    for frame in whole {
        guard case .line(let line) = frame else { continue }
        fuzzCheck(line.readableBytes <= maxLength, "a line of \(line.readableBytes) bytes, limit \(maxLength)")
        guard let request = ClientRequest.parse(line) else { continue }
        if case .invalid(let reason) = request {
            fuzzCheck(!reason.isEmpty, "an invalid request without a reason")
        } else if let command = request.commandLine {
            let again = ClientRequest.parse(ByteBuffer(string: command))
            fuzzCheck(again == request, "\(request) sends \(command), which parses as \(String(describing: again))")
        }
    }
    return 0
}

func fuzzSeeds(_ sources: SeedSources) -> [[UInt8]] {
    let lines = [
        #"{"cmd":"status"}"#, #"{"cmd":"status","devices":true}"#, #"{"cmd":"ping"}"#,
        #"{"cmd":"subscribe","beacons":false}"#, #"{"cmd":"subscribe"}"#, #"{"cmd":"bogus","x":1}"#,
        #"{"cmd":7}"#, #"[1,2]"#, "   ", #"{"cmd":"status","devices":"yes"}"#, "\u{1}", #"{"cmd":"\ud800"}"#,
    ]
    return [
        [200, 3, 1, 5, 7] + Array(lines.joined(separator: "\n").utf8) + [0x0A],
        [16, 0] + Array((lines.joined(separator: "\r\n") + "\r\n").utf8),
        [0, 2, 1, 1] + [UInt8](repeating: 0x41, count: 300) + [0x0A] + Array(lines[2].utf8) + [0x0A, 0xFF, 0xFE, 0x0A],
    ]
}

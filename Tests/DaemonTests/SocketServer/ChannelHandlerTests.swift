import Logging
import NIOCore
import NIOEmbedded
import NIOTestUtils
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The socket server's channel handlers on an `EmbeddedChannel`: writability is set by hand and
/// timers run on `advanceTime`, so nothing here waits on a real clock or a real socket.
@Suite struct ChannelHandlerTests {
    static func bytes(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    static func text(_ buffer: ByteBuffer?) -> String? { buffer.map { String(buffer: $0) } }

    /// A connected channel (closing it then means something) with `handlers` in order.
    static func channel(_ handlers: [any ChannelHandler]) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(handlers)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    // MARK: LineFrameDecoder

    @Test func lineDecoderGivesTheSameLinesHoweverTheBytesArrive() throws {
        // The verifier feeds each input whole, byte by byte, and all inputs at once.
        try ByteToMessageDecoderVerifier.verifyDecoder(
            stringInputOutputPairs: [
                ("status\n", [.line(Self.bytes("status"))]),
                ("ping\r\n", [.line(Self.bytes("ping"))]),
                ("\n", [.line(Self.bytes(""))]),
                ("a\nbb\n", [.line(Self.bytes("a")), .line(Self.bytes("bb"))]),
                ("12345678\r\n", [.line(Self.bytes("12345678"))]),
                ("0123456789abcdef\n", [.tooLong]),
                ("after\n", [.line(Self.bytes("after"))]),
            ],
            decoderFactory: { LineFrameDecoder(maxLength: 8) })
    }

    @Test func lineDecoderReportsALongLineOnceAndBuffersNoMoreThanTheLimit() throws {
        let channel = try Self.channel([ByteToMessageHandler(LineFrameDecoder(maxLength: 8))])
        try channel.writeInbound(Self.bytes(String(repeating: "x", count: 100)))
        #expect(try channel.readInbound(as: InboundLine.self) == .tooLong)
        try channel.writeInbound(Self.bytes(String(repeating: "y", count: 100)))
        #expect(try channel.readInbound(as: InboundLine.self) == nil)
        try channel.writeInbound(Self.bytes("zz\nnext\n"))
        #expect(try channel.readInbound(as: InboundLine.self) == .line(Self.bytes("next")))
        #expect(try channel.readInbound(as: InboundLine.self) == nil)
        // An unterminated last line is not a command.
        try channel.writeInbound(Self.bytes("stat"))
        #expect(try channel.finish().isClean)
    }

    // MARK: NIO's BackPressureHandler, as the socket server and the HTTP listeners use it

    /// Counts the reads that reach the channel's head.
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = NIOAny
        var reads = 0

        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    @Test func readsWaitWhileTheClientIsBackedUpAndResumeOnceItIsNot() throws {
        let counter = ReadCounter()
        let channel = try Self.channel([counter, BackPressureHandler()])
        let before = counter.reads
        channel.read()
        #expect(counter.reads == before + 1)

        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        channel.read()
        channel.read()
        #expect(counter.reads == before + 1)

        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(counter.reads == before + 2)
        // No read was pending: a second writability change reads nothing.
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(counter.reads == before + 2)
        _ = try channel.finish()
    }

    // MARK: RequestPacingHandler

    @Test func requestsWaitInOrderWhileTheClientIsBackedUp() throws {
        let counters = ServerCounters()
        let channel = try Self.channel([RequestPacingHandler(maxPending: 4, counters: counters)])
        try channel.writeInbound(ClientRequest.ping)
        #expect(try channel.readInbound(as: ClientRequest.self) == .ping)

        channel.isWritable = false
        try channel.writeInbound(ClientRequest.status)
        try channel.writeInbound(ClientRequest.subscribe(beacons: true))
        #expect(try channel.readInbound(as: ClientRequest.self) == nil)

        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(try channel.readInbound(as: ClientRequest.self) == .status)
        #expect(try channel.readInbound(as: ClientRequest.self) == .subscribe(beacons: true))
        #expect(try channel.readInbound(as: ClientRequest.self) == nil)
        #expect(channel.isActive)
        #expect(counters.disconnectedSlow == 0)
        _ = try channel.finish()
    }

    @Test func tooManyWaitingRequestsCloseTheConnection() throws {
        let counters = ServerCounters()
        let channel = try Self.channel([RequestPacingHandler(maxPending: 2, counters: counters)])
        channel.isWritable = false
        try channel.writeInbound(ClientRequest.ping)
        try channel.writeInbound(ClientRequest.ping)
        #expect(channel.isActive)
        try channel.writeInbound(ClientRequest.ping)
        #expect(!channel.isActive)
        #expect(counters.disconnectedSlow == 1)
        // Nothing queued is answered after the close.
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(try channel.readInbound(as: ClientRequest.self) == nil)
    }

    // MARK: OutboundQueueHandler

    static func queue(maxQueuedBeacons: Int = 64, counters: ServerCounters) throws -> EmbeddedChannel {
        var limits = ClientLimits()
        limits.maxQueuedBeacons = maxQueuedBeacons
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return try channel([
            OutboundQueueHandler(
                limits: limits, counters: counters, logger: logger,
                logLimiter: LogRateLimiter())
        ])
    }

    /// A queue whose client has stopped reading, with `lines` written to it.
    static func stalledQueue(counters: ServerCounters, holding lines: [OutboundLine]) throws -> EmbeddedChannel {
        let channel = try queue(counters: counters)
        channel.isWritable = false
        for line in lines { channel.writeAndFlush(line, promise: nil) }
        return channel
    }

    static func written(_ channel: EmbeddedChannel) throws -> [String] {
        var lines: [String] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { lines.append(String(buffer: buffer)) }
        return lines
    }

    @Test func aBackedUpClientGetsTheNewestStateItsBeaconsAndADropNoticeAtTheGap() throws {
        let counters = ServerCounters()
        let channel = try Self.queue(maxQueuedBeacons: 2, counters: counters)
        channel.writeAndFlush(OutboundLine.state(Self.bytes("s0\n")), promise: nil)
        #expect(try Self.written(channel) == ["s0\n"])

        channel.isWritable = false
        channel.writeAndFlush(OutboundLine.state(Self.bytes("s1\n")), promise: nil)
        channel.writeAndFlush(OutboundLine.beacon(Self.bytes("b1\n")), promise: nil)
        channel.writeAndFlush(OutboundLine.state(Self.bytes("s2\n")), promise: nil)
        channel.writeAndFlush(OutboundLine.beacon(Self.bytes("b2\n")), promise: nil)
        channel.writeAndFlush(OutboundLine.beacon(Self.bytes("b3\n")), promise: nil)
        #expect(try Self.written(channel).isEmpty)
        #expect(counters.coalescedStates == 1)
        #expect(counters.droppedLines == 1)

        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(try Self.written(channel) == ["s2\n", "b1\n", "b2\n", #"{"type":"dropped","count":1}"# + "\n"])
        #expect(channel.isActive)
        _ = try channel.finish()
    }

    @Test func aClientThatDoesNotCatchUpWithinTheTimeoutIsDisconnected() throws {
        let counters = ServerCounters()
        let channel = try Self.stalledQueue(
            counters: counters, holding: [.state(Self.bytes("s1\n")), .state(Self.bytes("s2\n"))])
        channel.embeddedEventLoop.advanceTime(by: ClientLimits().slowClientTimeout - .milliseconds(1))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        #expect(counters.disconnectedSlow == 1)
    }

    @Test func aClientThatCatchesUpInTimeStays() throws {
        let counters = ServerCounters()
        let channel = try Self.stalledQueue(
            counters: counters, holding: [.state(Self.bytes("s1\n")), .state(Self.bytes("s2\n"))])
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(try Self.written(channel) == ["s2\n"])
        channel.embeddedEventLoop.advanceTime(by: ClientLimits().slowClientTimeout * 2)
        #expect(channel.isActive)
        #expect(counters.disconnectedSlow == 0)
        _ = try channel.finish()
    }

    @Test func theFinalLineReplacesWhateverIsQueued() throws {
        let counters = ServerCounters()
        let channel = try Self.stalledQueue(
            counters: counters, holding: [.beacon(Self.bytes("b1\n")), .reply(Self.bytes("r1\n"))])
        channel.writeAndFlush(OutboundLine.final(Self.bytes("bye\n")), promise: nil)
        #expect(try Self.written(channel) == ["bye\n"])
        _ = try channel.finish()
    }
}

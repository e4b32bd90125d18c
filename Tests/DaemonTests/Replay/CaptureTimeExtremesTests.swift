import BeacondTestSupport
import CircuitState
import Foundation
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Time formatting and the replay clock at the ends of Int64 microseconds.
@Suite struct ReplayTimeExtremesTests {
    @Test func iso8601FormatsEveryInt64() {
        #expect(TimeFormat.iso8601(micros: .min, fractionDigits: 6) == "-290308-12-21T19:59:05.224192Z")
        #expect(TimeFormat.iso8601(micros: .max, fractionDigits: 6) == "+294247-01-10T04:00:54.775807Z")
        #expect(TimeFormat.iso8601(micros: .max) == "+294247-01-10T04:00:54.775Z")
        #expect(TimeFormat.iso8601(micros: -1, fractionDigits: 6) == "1969-12-31T23:59:59.999999Z")
        #expect(TimeFormat.iso8601(micros: 0) == "1970-01-01T00:00:00.000Z")
        #expect(TimeFormat.iso8601(micros: 1_778_932_810_000_000) == "2026-05-16T12:00:10.000Z")
        // Year 0000 and 9999 keep four digits; before and after, ISO 8601's signed expanded years.
        #expect(TimeFormat.iso8601(micros: -62_167_219_200_000_000) == "0000-01-01T00:00:00.000Z")
        #expect(
            TimeFormat.iso8601(micros: -62_167_219_200_000_001, fractionDigits: 6)
                == "-0001-12-31T23:59:59.999999Z")
        #expect(
            TimeFormat.iso8601(micros: 253_402_300_799_999_999, fractionDigits: 6)
                == "9999-12-31T23:59:59.999999Z")
        #expect(TimeFormat.iso8601(micros: 253_402_300_800_000_000) == "+10000-01-01T00:00:00.000Z")
        #expect(TimeFormat.iso8601(micros: 1_500_000, fractionDigits: 0) == "1970-01-01T00:00:01Z")
    }

    @Test func iso8601NeverTrapsOnRandomTimes() {
        var state: UInt64 = 0x1234_5678
        for _ in 0..<20_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let text = TimeFormat.iso8601(micros: Int64(bitPattern: state), fractionDigits: Int(state >> 61))
            #expect(text.hasSuffix("Z") && text.contains("T"))
        }
    }

    @Test func jsonSecondsAndNumbersAtTheEnds() {
        var writer = JSONWriter()
        writer.beginArray()
        writer.seconds(micros: .min)
        writer.seconds(micros: .max)
        writer.number(1e300, decimals: 3)
        writer.number(-9.3e15, decimals: 3)
        writer.number(9.2e15, decimals: 3)
        writer.endArray()
        #expect(
            String(decoding: writer.bytes, as: UTF8.self)
                == "[-9223372036854.775808,9223372036854.775807,null,null,9200000000000000.000]")
    }

    @Test func replayClockSaturatesAndCapsItsDelays() {
        let fast = ReplayClock(start: .max - 5, speed: .factor(1e9))
        // Real time on purpose: the replay clock runs on it, and 2 ms at 1e9x passes the end.
        usleep(2_000)
        #expect(fast.now() == .max)
        #expect(fast.realMicros(until: .min) == 0)
        let slow = ReplayClock(start: .min, speed: .factor(1))
        #expect(slow.realMicros(until: .max) == ReplayClock.maxRealMicros)
        #expect(slow.realDelay(until: .max) == .microseconds(ReplayClock.maxRealMicros))
        let tiny = ReplayClock(start: .min, speed: .factor(1e-300))
        #expect(tiny.realMicros(until: .max) == ReplayClock.maxRealMicros)
        #expect(tiny.now() >= .min)
        let normal = ReplayClock(start: 1_000_000, speed: .factor(2))
        let delay = normal.realMicros(until: 3_000_000)
        #expect(delay > 900_000 && delay <= 1_000_000)
        let maximum = ReplayClock(start: .min, speed: .maximum)
        maximum.jump(to: .max)
        maximum.jump(to: 0)
        #expect(maximum.now() == .max)
        #expect(maximum.realMicros(until: .min) == 0 && maximum.realDelay(until: .max) == nil)
    }

    @Test func loopShiftIsPositiveOrRefused() {
        #expect(ReplayBackend.nextOffset(0, span: (first: 5, latest: 5)) == ReplayBackend.passGap)
        #expect(ReplayBackend.nextOffset(10, span: (first: -3_000_000, latest: 2_000_000)) == 6_000_010)
        #expect(ReplayBackend.nextOffset(0, span: (first: .min, latest: .max)) == nil)
        #expect(ReplayBackend.nextOffset(0, span: (first: 0, latest: .max)) == nil)
        #expect(ReplayBackend.nextOffset(.max - 1_000_000, span: (first: 0, latest: 1)) == nil)
    }

    /// `run --backend replay` on a capture starting at Int64.min, with a saved remote state: the
    /// restored fetch time (now minus its age) saturates instead of trapping.
    @Test func hubRestoresARemoteStateOnAReplayClockAtInt64Min() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let hub = TrackStateHub(
            eventLoop: loop, configuration: FusionConfiguration(),
            clock: ReplayClock(start: .min, speed: .maximum), backend: "replay",
            logger: Logger(label: "test"))
        let evacuation = RemoteSnapshot(globalMode: "EVACUATION", message: "leave now")
        let restoration = RemoteRestoration(
            snapshot: evacuation, age: 3_600_000_000, latchedSnapshot: evacuation,
            fetchedWallMicros: 0)
        try await loop.submit {
            hub.restoreRemote(restoration)
            hub.start(checkClockEvery: nil)
        }.get()
        #expect(try await loop.submit { hub.latest.mode }.get() == .evacuation)
        try await loop.submit { hub.stop() }.get()
        try await group.shutdownGracefully()
    }

    /// A remote fetch recorded at Int64.min (a replay backend whose capture starts there, with a
    /// remote URL) evaluated at Int64.max: its age does not fit in Int64 and saturates.
    @Test func engineRemoteAgeAcrossTheWholeRange() {
        var engine = FusionEngine(configuration: FusionConfiguration())
        engine.remoteFetched(RemoteSnapshot(mode: "GREEN"), at: .min)
        let state = engine.evaluate(at: .max)
        #expect(state.remote?.age == .max)
        #expect(state.remote?.isFresh == false)
    }
}

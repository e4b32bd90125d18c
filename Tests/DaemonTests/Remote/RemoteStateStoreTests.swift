import BeacondTestSupport
import CircuitState
import Foundation
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import BeacondClient
@testable import BeacondCore

@Suite struct RemoteStateStoreTests: RemoteStateStoreSuite {
    static let evacuation = RemoteSnapshot(
        id: "9", globalMode: "EVACUATION", message: "Leave by gate \"B\"\n now",
        temperature: 18.25, humidity: 55, lastUpdated: "2026-05-16T12:00:00Z")

    @Test func roundTripsTheSnapshotTimeAndLatch() throws {
        let (store, logs) = try makeStore()
        #expect(store.load() == nil)
        #expect(logs.all.isEmpty) // no file yet is not worth a warning

        let green = RemoteSnapshot(
            id: "10", globalMode: "", mode: "GREEN", message: "café ✓", temperature: -3.75,
            humidity: .nan, wind: "N", forecast: "rain", lastUpdated: "x", evacuationRoute: "Puerta 3 → parking")
        let state = PersistedRemoteState(
            snapshot: green, fetchedWallMicros: Self.fetchedAt,
            latchedSnapshot: Self.evacuation)
        try store.save(state)
        var expected = state
        expected.snapshot.humidity = nil // JSON has no NaN
        #expect(store.load() == expected)
        #expect(store.load()?.isLatched == true)

        try store.save(PersistedRemoteState(snapshot: green, fetchedWallMicros: Self.fetchedAt + 1))
        #expect(store.load()?.latchedSnapshot == nil)
        #expect(store.load()?.fetchedWallMicros == Self.fetchedAt + 1)

        let text = try String(contentsOfFile: store.path, encoding: .utf8)
        #expect(text.contains(#""fetched_at":"2025-05-16T12:00:10.123Z""#))
        #expect(text.hasSuffix("}\n"))
    }

    @Test func restorationCarriesTheTrueAgeAndLatch() throws {
        let (store, _) = try makeStore()
        #expect(store.restoration(nowWallMicros: Self.fetchedAt) == nil)
        try store.save(
            PersistedRemoteState(
                snapshot: RemoteSnapshot(), fetchedWallMicros: Self.fetchedAt,
                latchedSnapshot: Self.evacuation))
        let restored = try #require(store.restoration(nowWallMicros: Self.fetchedAt + 95_000_000))
        #expect(restored.age == 95_000_000)
        #expect(restored.isLatched)
        #expect(restored.latchedSnapshot?.trackMode == .evacuation)
        #expect(restored.snapshot == RemoteSnapshot())
        // A wall clock now earlier than the save (set back) never gives a negative age.
        #expect(store.restoration(nowWallMicros: Self.fetchedAt - 5_000_000)?.age == 0)
        try store.save(PersistedRemoteState(snapshot: RemoteSnapshot(), fetchedWallMicros: .max))
        #expect(store.restoration(nowWallMicros: -5_000_000)?.age == 0)
    }

    @Test func writesAtomicallyAndIgnoresLeftoverTemporaryFiles() throws {
        let (store, _) = try makeStore()
        let first = Self.green
        try store.save(first)
        // A crash mid-write leaves at most a temporary file beside the real one; it changes nothing.
        try "{\"version\":1,\"fetch".write(toFile: store.path + ".tmp.99999", atomically: false, encoding: .utf8)
        #expect(store.load() == first)
        for index in 1...20 {
            try store.save(
                PersistedRemoteState(
                    snapshot: RemoteSnapshot(message: String(repeating: "m", count: index)),
                    fetchedWallMicros: Self.fetchedAt + Int64(index)))
        }
        #expect(store.load()?.snapshot.message == String(repeating: "m", count: 20))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: store.directory)
            .filter {
                $0.hasPrefix(RemoteStateStore.fileName + ".tmp.") && $0 != RemoteStateStore.fileName + ".tmp.99999"
            }
        #expect(leftovers.isEmpty)
    }

    @Test func ignoresACorruptOrPartialFileWithAWarning() throws {
        let (store, logs) = try makeStore()
        let good = Self.greenFile
        let bad = [
            String(good.prefix(good.count / 2)), // torn
            "",
            "[]",
            good.replacingOccurrences(of: #""version":1"#, with: #""version":2"#),
            good.replacingOccurrences(of: #""latched":false"#, with: #""latched":true"#), // no latched snapshot
            good.replacingOccurrences(of: #""fetched_at_us":\#(Self.fetchedAt)"#, with: #""fetched_at_us":"soon""#),
            good.replacingOccurrences(of: #""snapshot":{"#, with: #""snapshot":[7],"x":{"#),
        ]
        #expect(bad.allSatisfy { $0 != good })
        for (index, text) in bad.enumerated() {
            try text.write(toFile: store.path, atomically: true, encoding: .utf8)
            #expect(store.load() == nil, "case \(index)")
            #expect(logs.at(.warning).count == index + 1, "case \(index)")
        }
        try Data(repeating: UInt8(ascii: " "), count: RemoteStateStore.maxFileBytes + 1)
            .write(to: URL(fileURLWithPath: store.path))
        #expect(store.load() == nil)
        try good.write(toFile: store.path, atomically: true, encoding: .utf8)
        #expect(store.load()?.snapshot.globalMode == "GREEN")
    }

    @Test func createsTheStateDirectoryAndLogsWriteFailuresOnce() throws {
        let (logger, logs) = CapturingLogHandler.logger()
        let root = try RemoteTestTools.temporaryDirectory()
        let nested = RemoteStateStore(stateDirectory: root + "/var/lib/beacond", logger: logger)
        let state = Self.green
        #expect(nested.saveLogged(state))
        #expect(nested.load() == state)

        try "not a directory".write(toFile: root + "/file", atomically: true, encoding: .utf8)
        let broken = RemoteStateStore(stateDirectory: root + "/file", logger: logger)
        #expect(!broken.saveLogged(state))
        #expect(!broken.saveLogged(state))
        #expect(logs.at(.warning).count == 1)
    }
}

@Suite struct HubRemoteSinkTests {
    @Test func deliversToTheHubAndSavesTheEngineLatch() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let clock = ManualClock(5_000 * 1_000_000)
        let hub = TrackStateHub(testingOn: loop, clock: clock)
        try await loop.submit { hub.start(checkClockEvery: nil) }.get()
        let (logger, _) = CapturingLogHandler.logger()
        let store = RemoteStateStore(stateDirectory: try RemoteTestTools.temporaryDirectory(), logger: logger)
        let sink = HubRemoteSink(hub: hub, store: store)

        let evacuation = RemoteSnapshot(globalMode: "EVACUATION", message: "leave now")
        await sink.remoteFetched(evacuation, wallMicros: 1_000)
        #expect(
            store.load()
                == PersistedRemoteState(
                    snapshot: evacuation, fetchedWallMicros: 1_000,
                    latchedSnapshot: evacuation))
        #expect(try await loop.submit { hub.latest.mode }.get() == .evacuation)

        // `{}` keeps the latch in the engine, and so in the file, with the evacuation's message.
        await sink.remoteFetched(RemoteSnapshot(), wallMicros: 2_000)
        #expect(
            store.load()
                == PersistedRemoteState(
                    snapshot: RemoteSnapshot(), fetchedWallMicros: 2_000,
                    latchedSnapshot: evacuation))

        await sink.remoteFailed(RemoteFailure(kind: .httpStatus, reason: "HTTP 500"))
        let afterFailure = try await loop.submit { hub.engine.remoteStatus(at: clock.now()) }.get()
        #expect(afterFailure?.lastFailureReason == "HTTP 500")
        #expect(afterFailure?.isLatched == true)
        #expect(store.load()?.fetchedWallMicros == 2_000) // a failure saves nothing

        // A known mode other than evacuation releases the latch.
        await sink.remoteFetched(RemoteSnapshot(globalMode: "GREEN"), wallMicros: 3_000)
        #expect(
            store.load()
                == PersistedRemoteState(
                    snapshot: RemoteSnapshot(globalMode: "GREEN"),
                    fetchedWallMicros: 3_000))
        #expect(try await loop.submit { hub.latest.mode }.get() == .normal)
        try await loop.submit { hub.stop() }.get()
        try await group.shutdownGracefully()
    }
}

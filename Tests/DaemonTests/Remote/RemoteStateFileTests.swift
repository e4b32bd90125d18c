import BeacondTestSupport
import CircuitState
import Foundation
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import BeacondClient
@testable import BeacondCore

#if canImport(Glibc)
import Glibc
#endif

/// The state file's size bound: what the writer can produce, the loader reads.
@Suite struct RemoteStateFileBoundTests: RemoteStateStoreSuite {
    /// The characters that cost the most to escape, and multi-byte UTF-8.
    static let worstCharacters: [Character] = [
        "/", "\"", "\\", "\u{1}", "\u{1F}", "\n", "\u{7F}", "é", "😀", "\u{2028}",
    ]

    @Test func theLoadersCapIsTheWritersWorstCase() throws {
        let worst = RemoteStateStore.encode(RemoteStateStore.worstCase)
        #expect(worst.count == RemoteStateStore.maxFileBytes)
        #expect(RemoteStateStore.maxFileBytes < 64 * 1024) // about 22 KiB
        let decoded = try RemoteStateStore.decode(worst)
        #expect(decoded == RemoteStateStore.worstCase)
        // The worst case's numbers are the longest a Double prints.
        var generator = SplitMix64(seed: 42)
        for _ in 0..<10_000 {
            let value = Double(bitPattern: generator.next())
            if value.isFinite { #expect(value.description.utf8.count <= 24, "\(value)") }
        }
    }

    /// Every field at (and past) its cap, of each worst character: the file stays under the cap,
    /// reads back as written, and a latched evacuation survives the restart.
    @Test func maximumFieldsOfTheWorstCharactersSurviveARestart() throws {
        for character in Self.worstCharacters {
            let (store, logs) = try makeStore()
            let long = String(repeating: character, count: RemoteStateDocument.maxMessageBytes + 10)
            let everyField = RemoteSnapshot(
                id: long, globalMode: long, mode: long, message: long, temperature: -2.2250738585072014e-308,
                humidity: 1.7976931348623157e308, wind: long, forecast: long, lastUpdated: long)
            var evacuation = everyField
            evacuation.globalMode = "EVACUATION"
            let state = PersistedRemoteState(snapshot: everyField, fetchedWallMicros: .max, latchedSnapshot: evacuation)
            try store.save(state)

            let size = try #require(try FileManager.default.attributesOfItem(atPath: store.path)[.size] as? Int)
            #expect(size <= RemoteStateStore.maxFileBytes, "\(character.unicodeScalars.map(\.value))")
            let expected = PersistedRemoteState(
                snapshot: RemoteStateDocument.capped(everyField), fetchedWallMicros: .max,
                latchedSnapshot: RemoteStateDocument.capped(evacuation))
            #expect(store.load() == expected, "\(character.unicodeScalars.map(\.value))")
            let message = try #require(expected.latchedSnapshot?.message)
            #expect(message.utf8.count <= RemoteStateDocument.maxMessageBytes)
            #expect(message.utf8.count > RemoteStateDocument.maxMessageBytes - 4)

            let restarted = RemoteStateStore(stateDirectory: store.directory, logger: Logger(label: "test"))
            let restored = try #require(restarted.restoration(nowWallMicros: Self.fetchedAt))
            #expect(restored.isLatched)
            #expect(restored.latchedSnapshot?.trackMode == .evacuation)
            #expect(logs.at(.warning).isEmpty)
        }
    }

    @Test func escapesOnlyWhatJSONRequires() throws {
        let state = PersistedRemoteState(
            snapshot: RemoteSnapshot(message: "gate 3/4 \"B\" \\ é😀\u{1}"), fetchedWallMicros: Self.fetchedAt)
        let text = String(decoding: RemoteStateStore.encode(state), as: UTF8.self)
        #expect(text.contains(#""message":"gate 3/4 \"B\" \\ é😀\u0001""#))
        #expect(!text.contains(#"\/"#))
        #expect(text.contains(#""temperature":null"#))
        #expect(try RemoteStateStore.decode(Array(text.utf8)) == state)
    }

    /// The loader takes fetch times from 1 µs on; a wall clock before 1970 must not write a file it refuses.
    @Test func aWallClockBefore1970StillSavesTheLatch() throws {
        let (store, logs) = try makeStore()
        let evacuation = RemoteSnapshot(globalMode: "EVACUATION", message: "leave")
        for early in [Int64.min, -5, 0] {
            try store.save(
                PersistedRemoteState(
                    snapshot: evacuation, fetchedWallMicros: early,
                    latchedSnapshot: evacuation))
            #expect(
                store.load()
                    == PersistedRemoteState(
                        snapshot: evacuation, fetchedWallMicros: 1,
                        latchedSnapshot: evacuation))
        }
        #expect(logs.at(.warning).isEmpty)
    }

    @Test func aStateFileWithDuplicateKeysIsIgnored() throws {
        let (store, logs) = try makeStore()
        let good = Self.greenFile
        try good.replacingOccurrences(of: #""latched":false"#, with: #""latched":false,"latched":true"#)
            .write(toFile: store.path, atomically: true, encoding: .utf8)
        #expect(store.load() == nil)
        #expect(logs.at(.warning).first?.message.contains(#"duplicate key "latched""#) == true)
    }
}

@Suite struct RemoteStateRestartTests {
    /// A started hub; `restoration` is applied before the start, as the daemon does.
    func withHub(
        restoring restoration: RemoteRestoration? = nil,
        _ body: (TrackStateHub, any EventLoop) async throws -> Void
    ) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let hub = TrackStateHub(
            eventLoop: loop, configuration: FusionConfiguration(), clock: ManualClock(5_000 * 1_000_000),
            backend: "test", logger: Logger(label: "test"))
        try await loop.submit {
            if let restoration { hub.restoreRemote(restoration) }
            hub.start(checkClockEvery: nil)
        }.get()
        try await body(hub, loop)
        try await loop.submit { hub.stop() }.get()
        try await group.shutdownGracefully()
    }

    /// Issue 9: a 64 KiB message of `/` was saved as 262,406 bytes, which the loader refused, so the
    /// latched evacuation was lost on restart and kiosks showed UNKNOWN.
    @Test func aLatchedEvacuationWithAMaximalBodySurvivesARestart() async throws {
        let head = #"{"global_mode":"EVACUATION","message":""#
        let tail = #"","wind":"\#(String(repeating: "\\\"", count: 100))"}"#
        let room = RemotePollerConfiguration.maxBodyBytes - head.utf8.count - tail.utf8.count
        let slashes = String(repeating: "/", count: room)
        let body = Data((head + slashes + tail).utf8)
        #expect(body.count == RemotePollerConfiguration.maxBodyBytes)
        let snapshot = try RemoteStateDocument.snapshot(fromBody: body)
        #expect(snapshot.message == String(repeating: "/", count: RemoteStateDocument.maxMessageBytes))

        let directory = try RemoteTestTools.temporaryDirectory()
        try await withHub { hub, _ in
            let store = RemoteStateStore(stateDirectory: directory, logger: Logger(label: "test"))
            await HubRemoteSink(hub: hub, store: store).remoteFetched(snapshot, wallMicros: 1_747_396_810_000_000)
        }
        let (logger, logs) = CapturingLogHandler.logger()
        let restarted = RemoteStateStore(stateDirectory: directory, logger: logger)
        let restoration = try #require(restarted.restoration(nowWallMicros: 1_747_396_820_000_000))
        #expect(logs.at(.warning).isEmpty)
        try await withHub(restoring: restoration) { hub, loop in
            let (mode, message) = try await loop.submit {
                (hub.latest.mode, hub.engine.remoteStatus(at: hub.engine.clock)?.message)
            }.get()
            #expect(mode == .evacuation)
            #expect(message == snapshot.message)
        }
    }
}

@Suite struct RemoteStateDirectoryTests {
    func store(_ directory: String) -> (RemoteStateStore, CapturingLogHandler.Store) {
        let (logger, logs) = CapturingLogHandler.logger()
        return (RemoteStateStore(stateDirectory: directory, logger: logger), logs)
    }

    let state = PersistedRemoteState(snapshot: RemoteSnapshot(globalMode: "GREEN"), fetchedWallMicros: 1_000)

    @Test func aStateDirectoryThatIsAFileIsSaidInWords() throws {
        let root = try RemoteTestTools.temporaryDirectory()
        try "x".write(toFile: root + "/file", atomically: true, encoding: .utf8)
        let (broken, logs) = store(root + "/file")
        let expected = "state_dir \(root)/file is not a directory"
        #expect(throws: StateDirectoryError(reason: expected)) { try broken.save(state) }
        #expect(broken.restoration(nowWallMicros: 2_000) == nil)
        let warnings = logs.at(.warning).map(\.message)
        #expect(warnings.count == 2)
        #expect(warnings.allSatisfy { $0.contains(expected) && !$0.contains("NSCocoaErrorDomain") }, "\(warnings)")
        #expect(!broken.saveLogged(state))
        #expect(logs.at(.warning).last?.message == "cannot save the remote state: \(expected)")
    }

    @Test func aParentThatIsAFileIsNamed() throws {
        let root = try RemoteTestTools.temporaryDirectory()
        try "x".write(toFile: root + "/file", atomically: true, encoding: .utf8)
        let (broken, logs) = store(root + "/file/beacond/state")
        #expect(
            throws: StateDirectoryError(
                reason: "state_dir \(root)/file/beacond/state cannot exist: \(root)/file is not a directory")
        ) {
            try broken.save(state)
        }
        #expect(broken.load() == nil)
        #expect(logs.at(.warning).first?.message.contains("\(root)/file is not a directory") == true)
    }

    @Test func aMissingDirectoryIsCreatedQuietly() throws {
        let root = try RemoteTestTools.temporaryDirectory()
        let (fresh, logs) = store(root + "/var/lib/beacond/")
        #expect(RemoteStateDirectory.problem(fresh.directory) == nil)
        #expect(fresh.restoration(nowWallMicros: 2_000) == nil)
        try fresh.save(state)
        #expect(fresh.load() == state)
        #expect(logs.all.filter { $0.level >= .warning }.isEmpty)
    }

    @Test(.enabled(if: geteuid() != 0, "root writes through any permission bits; cannot test unwritable directories"))
    func unwritableDirectoriesAreSaidInWords() throws {
        let root = try RemoteTestTools.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: root + "/ro", withIntermediateDirectories: false)
        chmod(root + "/ro", 0o555)
        defer { chmod(root + "/ro", 0o755) }
        #expect(
            RemoteStateDirectory.problem(root + "/ro")?.reason
                == "state_dir \(root)/ro is not writable (Permission denied)")
        #expect(
            RemoteStateDirectory.problem(root + "/ro/sub")?.reason
                == "state_dir \(root)/ro/sub does not exist and cannot be created: "
                + "\(root)/ro is not writable (Permission denied)")
        let (broken, _) = store(root + "/ro")
        #expect(throws: StateDirectoryError.self) { try broken.save(state) }
    }
}

import CircuitState
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The last good remote state as saved in `<state_dir>/remote-state.json`:
///
///     {"version":1,"fetched_at_us":1747396810000000,"fetched_at":"2026-05-16T12:00:10.000Z",
///      "latched":false,"snapshot":{"id":"1","global_mode":"GREEN",...},"latched_snapshot":null}
///
/// `snapshot` and `latched_snapshot` use the venue API's field names.
struct PersistedRemoteState: Hashable, Sendable {
    static let version = 1

    /// The last successful fetch.
    var snapshot: RemoteSnapshot
    /// When it completed, Unix µs.
    var fetchedWallMicros: Int64
    /// While the engine holds an evacuation latched: the fetch that reported it.
    var latchedSnapshot: RemoteSnapshot?

    var isLatched: Bool { latchedSnapshot != nil }

    init(snapshot: RemoteSnapshot, fetchedWallMicros: Int64, latchedSnapshot: RemoteSnapshot? = nil) {
        self.snapshot = snapshot
        self.fetchedWallMicros = fetchedWallMicros
        self.latchedSnapshot = latchedSnapshot
    }
}

/// What to put back into the engine at start: the last known remote state, never fresh.
struct RemoteRestoration: Hashable, Sendable {
    var snapshot: RemoteSnapshot
    /// How long ago it was fetched, µs (0 when the wall clock now reads earlier).
    var age: Int64
    /// Set when an evacuation was latched: it is published again at once.
    var latchedSnapshot: RemoteSnapshot?
    var fetchedWallMicros: Int64

    var isLatched: Bool { latchedSnapshot != nil }
}

/// Saves and restores the last good remote state. Writes are atomic (temporary file, fsync,
/// rename, fsync of the directory): a crash leaves the old file or the new one, never a torn one.
/// A file that cannot be read back (corrupt, partial, another version) is ignored with a warning.
final class RemoteStateStore: Sendable {
    static let fileName = "remote-state.json"
    /// A state file is a few hundred bytes; anything far bigger is not ours.
    static let maxFileBytes = 256 * 1024

    let directory: String
    let path: String
    private let logger: Logger
    /// Serializes writes; remembers whether the last one failed, to log failures once.
    private let writeState = Mutex(false)

    init(stateDirectory: String, logger: Logger) {
        directory = stateDirectory
        path = (stateDirectory.hasSuffix("/") ? stateDirectory : stateDirectory + "/") + Self.fileName
        self.logger = logger
    }

    // MARK: Saving

    func save(_ state: PersistedRemoteState) throws {
        let bytes = Self.encode(state)
        try writeState.withLock { _ in
            try Self.makeDirectory(directory)
            try FileOutput.write(bytes, to: path, mode: 0o644)
            Self.syncDirectory(directory)
        }
    }

    /// `save`, logging a failure once until a save succeeds again. Returns whether it saved.
    @discardableResult
    func saveLogged(_ state: PersistedRemoteState) -> Bool {
        do {
            try save(state)
            let recovered = writeState.withLock { failing in
                defer { failing = false }
                return failing
            }
            if recovered {
                logger.limited(.info, "state.save", "remote state saved again", metadata: ["path": "\(path)"])
            }
            return true
        } catch {
            let first = writeState.withLock { failing in
                defer { failing = true }
                return !failing
            }
            if first {
                logger.limited(.warning, "state.save",
                    "cannot save the remote state: \(TerminalText.logged("\(error)"))", metadata: ["path": "\(path)"])
            }
            return false
        }
    }

    // MARK: Loading

    /// The saved state; nil when there is none or it is unusable (logged as a warning).
    func load() -> PersistedRemoteState? {
        let data: Data
        do {
            data = try Self.readCapped(path)
        } catch let error as CocoaError where error.code == .fileReadNoSuchFile {
            return nil
        } catch {
            logger.warning("ignoring the saved remote state: \(error)", metadata: ["path": "\(path)"])
            return nil
        }
        do {
            return try Self.decode(data)
        } catch {
            logger.warning("ignoring the saved remote state: \(error)", metadata: ["path": "\(path)"])
            return nil
        }
    }

    /// What to restore at start, `nowWallMicros` being the wall clock (Unix µs).
    func restoration(nowWallMicros: Int64 = MonotonicClock.wallMicros()) -> RemoteRestoration? {
        guard let state = load() else { return nil }
        let restoration = RemoteRestoration(
            snapshot: state.snapshot, age: max(0, nowWallMicros - state.fetchedWallMicros),
            latchedSnapshot: state.latchedSnapshot, fetchedWallMicros: state.fetchedWallMicros)
        logger.info(
            "restored the last known remote state",
            metadata: [
                "fetched_at": "\(TimeFormat.iso8601(micros: state.fetchedWallMicros))",
                "age_s": "\(restoration.age / 1_000_000)", "latched": "\(restoration.isLatched)",
            ])
        return restoration
    }

    // MARK: Format

    static func encode(_ state: PersistedRemoteState) -> [UInt8] {
        let object: [String: Any] = [
            "version": PersistedRemoteState.version,
            "fetched_at_us": state.fetchedWallMicros,
            "fetched_at": TimeFormat.iso8601(micros: state.fetchedWallMicros),
            "latched": state.isLatched,
            "snapshot": documentObject(state.snapshot),
            "latched_snapshot": state.latchedSnapshot.map(documentObject) ?? NSNull(),
        ]
        // Every value is a string, number, bool, null or object of those: this cannot fail.
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Array(data) + [UInt8(ascii: "\n")]
    }

    /// The snapshot with the venue API's field names; nil fields are null. NaN and infinities,
    /// which JSON cannot hold, become null.
    private static func documentObject(_ snapshot: RemoteSnapshot) -> [String: Any] {
        func text(_ value: String?) -> Any { value ?? NSNull() }
        func number(_ value: Double?) -> Any { value.flatMap { $0.isFinite ? $0 : nil } ?? NSNull() }
        return [
            "id": text(snapshot.id), "global_mode": text(snapshot.globalMode), "mode": text(snapshot.mode),
            "message": text(snapshot.message), "temperature": number(snapshot.temperature),
            "humidity": number(snapshot.humidity), "wind": text(snapshot.wind), "forecast": text(snapshot.forecast),
            "last_updated": text(snapshot.lastUpdated),
        ]
    }

    struct FormatError: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    static func decode(_ data: Data) throws -> PersistedRemoteState {
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw FormatError(reason: "not JSON (a partial or corrupt file)")
        }
        guard let object = value as? [String: Any] else { throw FormatError(reason: "not a JSON object") }
        guard let version = object["version"] as? Int, version == PersistedRemoteState.version else {
            throw FormatError(reason: "unknown version \(object["version"].map { "\($0)" } ?? "none")")
        }
        guard let stamp = object["fetched_at_us"] as? NSNumber, let micros = Int64(exactly: stamp.doubleValue),
              micros > 0 else {
            throw FormatError(reason: "\"fetched_at_us\" must be a positive integer")
        }
        guard let latched = object["latched"] as? Bool else { throw FormatError(reason: "\"latched\" must be a boolean") }
        guard let snapshotObject = object["snapshot"] as? [String: Any] else {
            throw FormatError(reason: "\"snapshot\" must be an object")
        }
        let snapshot = try documentSnapshot(snapshotObject)
        var latchedSnapshot: RemoteSnapshot?
        if latched {
            guard let latchedObject = object["latched_snapshot"] as? [String: Any] else {
                throw FormatError(reason: "\"latched\" is true but \"latched_snapshot\" is not an object")
            }
            latchedSnapshot = try documentSnapshot(latchedObject)
        }
        return PersistedRemoteState(snapshot: snapshot, fetchedWallMicros: micros, latchedSnapshot: latchedSnapshot)
    }

    private static func documentSnapshot(_ object: [String: Any]) throws -> RemoteSnapshot {
        do {
            return try RemoteStateDocument.snapshot(fromJSON: object)
        } catch {
            throw FormatError(reason: "bad snapshot: \(error)")
        }
    }

    // MARK: Files

    private static func readCapped(_ path: String) throws -> Data {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        let data = try handle.read(upToCount: maxFileBytes + 1) ?? Data()
        guard data.count <= maxFileBytes else { throw FormatError(reason: "file over \(maxFileBytes) bytes") }
        return data
    }

    private static func makeDirectory(_ directory: String) throws {
        var info = stat()
        if stat(directory, &info) == 0 { return }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o755])
        } catch {
            throw FileWriteError(path: directory, operation: "create directory", code: errno == 0 ? EIO : errno)
        }
    }

    /// Makes the rename itself durable.
    private static func syncDirectory(_ directory: String) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}

import CircuitState
import Foundation
import Glibc
import Logging
import Synchronization

/// The last good remote state as saved in `<state_dir>/remote-state.json`:
///
///     {"version":1,"fetched_at_us":1747396810000000,"fetched_at":"2026-05-16T12:00:10.000Z",
///      "latched":false,"snapshot":{"id":"1","global_mode":"GREEN",...},"latched_snapshot":null}
///
/// `snapshot` and `latched_snapshot` use the venue API's field names. Text fields are cut to the
/// document's caps before writing, so the file never exceeds `RemoteStateStore.maxFileBytes`,
/// which the loader reads: the writer and the loader agree by construction.
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

extension PersistedRemoteState: Decodable {
    enum CodingKeys: String, CodingKey {
        case version, latched, snapshot
        case fetchedAtMicros = "fetched_at_us"
        case latchedSnapshot = "latched_snapshot"
    }

    /// The file as `RemoteStateStore.encode` writes it. `fetched_at` (text) is for people and not
    /// read; `latched_snapshot` is read only when `latched` is true. The snapshots are venue rows
    /// (`VenueStateRow`), so a hand-edited file is held to the document's caps.
    init(from decoder: any Decoder) throws {
        let file = try decoder.container(keyedBy: CodingKeys.self)
        guard try file.decode(Int.self, forKey: .version) == Self.version else {
            throw DecodingError.dataCorruptedError(
                forKey: .version, in: file, debugDescription: "must be \(Self.version)")
        }
        let micros = try file.decode(Int64.self, forKey: .fetchedAtMicros)
        guard micros > 0 else {
            throw DecodingError.dataCorruptedError(
                forKey: .fetchedAtMicros, in: file, debugDescription: "must be a positive integer")
        }
        let latched = try file.decode(Bool.self, forKey: .latched)
        let snapshot = try file.decode(VenueStateRow.self, forKey: .snapshot).snapshot
        let latchedSnapshot = latched ? try file.decode(VenueStateRow.self, forKey: .latchedSnapshot).snapshot : nil
        self.init(snapshot: snapshot, fetchedWallMicros: micros, latchedSnapshot: latchedSnapshot)
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
    /// The largest file `encode` can produce, which is the loader's cap: the encoding of
    /// `worstCase`. A larger file is not ours.
    static let maxFileBytes = encode(worstCase).count

    /// The longest state `encode` can be given: both snapshots with every text field at its cap of
    /// a control character (escaped as `\u00XX`: 6 bytes per byte, the most any byte takes), the
    /// longest Double (24 bytes) in each number, and the latest time an Int64 holds (a 6-digit year).
    static var worstCase: PersistedRemoteState {
        let field = String(repeating: "\u{1}", count: RemoteStateDocument.maxFieldBytes)
        let longestDouble = -2.2250738585072014e-308
        let snapshot = RemoteSnapshot(
            id: field, globalMode: field, mode: field,
            message: String(repeating: "\u{1}", count: RemoteStateDocument.maxMessageBytes),
            temperature: longestDouble, humidity: longestDouble, wind: field, forecast: field, lastUpdated: field,
            evacuationRoute: String(repeating: "\u{1}", count: RemoteStateDocument.maxMessageBytes))
        return PersistedRemoteState(snapshot: snapshot, fetchedWallMicros: .max, latchedSnapshot: snapshot)
    }

    let directory: String
    let path: String
    private let logger: Logger
    private let logLimiter: LogRateLimiter
    /// Serializes writes; remembers whether the last one failed, to log failures once.
    private let writeState = Mutex(false)

    init(stateDirectory: String, logger: Logger, logLimiter: LogRateLimiter = LogRateLimiter()) {
        directory = stateDirectory
        path = (stateDirectory.hasSuffix("/") ? stateDirectory : stateDirectory + "/") + Self.fileName
        self.logger = logger
        self.logLimiter = logLimiter
    }

    // MARK: Saving

    /// Throws `StateDirectoryError` when `state_dir` is the problem (not a directory, not
    /// writable, cannot be created), else the `FileWriteError`.
    func save(_ state: PersistedRemoteState) throws {
        let bytes = Self.encode(state)
        try writeState.withLock { _ in
            do {
                try FileOutput.makeDirectory(directory)
                try FileOutput.write(bytes, to: path, mode: 0o644)
            } catch {
                throw RemoteStateDirectory.problem(directory) ?? error
            }
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
                logger.limited(
                    limiter: logLimiter, .info, "state.save",
                    "remote state saved again", metadata: ["path": "\(path)"])
            }
            return true
        } catch {
            let first = writeState.withLock { failing in
                defer { failing = true }
                return !failing
            }
            if first {
                logger.limited(
                    limiter: logLimiter, .warning, "state.save",
                    "cannot save the remote state: \(TerminalText.logged("\(error)"))", metadata: ["path": "\(path)"])
            }
            return false
        }
    }

    // MARK: Loading

    /// The saved state; nil when there is none or it is unusable (logged as a warning).
    func load() -> PersistedRemoteState? {
        do {
            guard let data = try Self.readCapped(path, directory: directory) else { return nil }
            return try Self.decode(data)
        } catch {
            logger.warning("ignoring the saved remote state: \(error)", metadata: ["path": "\(path)"])
            return nil
        }
    }

    /// What to restore at start, `nowWallMicros` being the wall clock (Unix µs). Also warns, in
    /// words, when `state_dir` cannot take the next save.
    func restoration(nowWallMicros: Int64 = MonotonicClock.wallMicros()) -> RemoteRestoration? {
        let state = load()
        if let problem = RemoteStateDirectory.problem(directory) {
            logger.warning("the remote state will not be saved: \(problem)", metadata: ["path": "\(path)"])
        }
        guard let state else { return nil }
        // A wall clock before 1970 less a saved time near Int64.max would overflow: the age is then 0.
        let (age, overflow) = nowWallMicros.subtractingReportingOverflow(state.fetchedWallMicros)
        let restoration = RemoteRestoration(
            snapshot: state.snapshot, age: overflow ? 0 : max(0, age),
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

    /// The file's bytes; snapshots are cut to the document's caps first, strings escape only what
    /// JSON and terminals need (`"`, `\`, control characters, DEL; never `/`).
    /// A wall clock before 1970 is saved as 1 µs, the earliest time the loader takes: the state
    /// (and its latch) is restored, as very old, rather than written and then refused.
    static func encode(_ state: PersistedRemoteState) -> [UInt8] {
        let fetched = max(1, state.fetchedWallMicros)
        var writer = JSONWriter(capacity: 1024)
        writer.beginObject()
        writer.key("version"); writer.int(PersistedRemoteState.version)
        writer.key("fetched_at_us"); writer.int(fetched)
        writer.key("fetched_at"); writer.string(TimeFormat.iso8601(micros: fetched))
        writer.key("latched"); writer.bool(state.isLatched)
        writer.key("snapshot"); write(state.snapshot, into: &writer)
        writer.key("latched_snapshot")
        if let latched = state.latchedSnapshot { write(latched, into: &writer) } else { writer.null() }
        writer.endObject()
        writer.newline()
        return writer.bytes
    }

    /// The snapshot with the venue API's field names; nil fields are null, and so are NaN and
    /// infinities, which JSON cannot hold.
    private static func write(_ snapshot: RemoteSnapshot, into writer: inout JSONWriter) {
        let capped = RemoteStateDocument.capped(snapshot)
        writer.beginObject()
        writer.key("id"); writer.string(orNull: capped.id)
        writer.key("global_mode"); writer.string(orNull: capped.globalMode)
        writer.key("mode"); writer.string(orNull: capped.mode)
        writer.key("message"); writer.string(orNull: capped.message)
        writer.key("temperature"); if let value = capped.temperature { writer.number(value) } else { writer.null() }
        writer.key("humidity"); if let value = capped.humidity { writer.number(value) } else { writer.null() }
        writer.key("wind"); writer.string(orNull: capped.wind)
        writer.key("forecast"); writer.string(orNull: capped.forecast)
        writer.key("last_updated"); writer.string(orNull: capped.lastUpdated)
        writer.key("evacuation_route"); writer.string(orNull: capped.evacuationRoute)
        writer.endObject()
    }

    struct FormatError: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    /// The file's state: parsed strictly (`RemoteJSON`: no duplicate keys), then decoded
    /// (`PersistedRemoteState.init(from:)`); a failure names the field.
    static func decode(_ data: [UInt8]) throws -> PersistedRemoteState {
        let object: RemoteJSON
        do {
            object = try RemoteJSON.parse(data)
        } catch {
            throw FormatError(reason: "not JSON (a partial or corrupt file): \(error)")
        }
        do {
            return try RemoteJSONDecoder.decode(PersistedRemoteState.self, from: object)
        } catch {
            throw FormatError(reason: error.message(whole: "the file"))
        }
    }

    // MARK: Files

    /// The file's bytes, at most `maxFileBytes`; nil when there is no file (or no directory yet).
    private static func readCapped(_ path: String, directory: String) throws -> [UInt8]? {
        do {
            return try readRegularFile(path, maxBytes: maxFileBytes)
        } catch .open(let code) {
            if code == ENOENT { return nil }
            if let problem = RemoteStateDirectory.problem(directory), code == ENOTDIR || code == EACCES {
                throw problem
            }
            throw FormatError(reason: "cannot open \(path): \(errnoText(code))")
        } catch .stat(let code) {
            throw FormatError(reason: "cannot stat \(path): \(errnoText(code))")
        } catch .notRegular(let kind) {
            throw FormatError(reason: "\(path) \(BoundedFileError.notRegular(kind))")
        } catch .tooLarge {
            throw FormatError(reason: "file over \(maxFileBytes) bytes")
        } catch .read(let code) {
            throw FormatError(reason: "cannot read \(path): \(errnoText(code))")
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

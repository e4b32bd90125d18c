import Glibc
import Logging
import Synchronization
import SystemPackage

/// How log lines look.
enum LogFormat: Hashable, Sendable {
    /// `<6>label: message key=value`: journald reads the priority and adds its own timestamp.
    case journal
    /// `2026-05-16T12:00:10.123Z info label: message key=value`
    case plain

    /// `.journal` when stderr is the journal stream systemd connected: `JOURNAL_STREAM` is set and
    /// names stderr's device and inode (as systemd documents), so stderr redirected elsewhere by a
    /// wrapper gets plain lines.
    static func detect(environment: [String: String], stderr fd: Int32 = STDERR_FILENO) -> LogFormat {
        guard let stream = environment["JOURNAL_STREAM"] else { return .plain }
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return .plain }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .plain }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode ? .journal : .plain
    }

    /// The `JOURNAL_STREAM` value systemd would set for `fd` (`device:inode`), for tests and tools.
    static func journalStreamValue(for fd: Int32) -> String? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return "\(UInt64(info.st_dev)):\(UInt64(info.st_ino))"
    }
}

/// Where finished log lines go. Each call gets one whole line, newline included.
struct LogSink: Sendable {
    let write: @Sendable (String) -> Void

    init(_ write: @escaping @Sendable (String) -> Void) { self.write = write }

    /// Standard error, one `write(2)` per line, so lines from different threads do not interleave.
    static let stderr = LogSink { line in
        _ = try? FileDescriptor.standardError.writeAll(line.utf8)
    }
}

/// The process-wide log level, which a config reload can change under every logger at once.
package final class LogLevelControl: Sendable {
    private let index: Atomic<Int>

    init(_ level: Logger.Level = .info) {
        index = Atomic(Self.levels.firstIndex(of: level)!)
    }

    private static let levels = Logger.Level.allCases

    var level: Logger.Level {
        get { Self.levels[index.load(ordering: .relaxed)] }
        set { index.store(Self.levels.firstIndex(of: newValue)!, ordering: .relaxed) }
    }
}

/// A swift-log handler writing one line per message to stderr (or an injected sink).
///
/// Everything `TerminalText` escapes (controls, bidi controls, line separators) is escaped in the
/// message, metadata and label (`\u{1b}`), so nothing from outside can start a new line, drive a
/// terminal or reorder what a line shows. A metadata value is cut at `TerminalText.logLimit` (512)
/// bytes and the message at `messageLimit` bytes, with `…`. Metadata is sorted by key.
struct StderrLogHandler: LogHandler {
    /// A backstop: sites cut each piece of outside text at 512 bytes, so only a line made of
    /// several long pieces gets here.
    static let messageLimit = 2048

    let label: String
    let format: LogFormat
    let sink: LogSink
    let control: LogLevelControl
    /// Unix microseconds, for plain lines.
    let clock: @Sendable () -> Int64
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    /// Set on this logger only; nil follows `control`.
    private var localLevel: Logger.Level?

    init(
        label: String, format: LogFormat, control: LogLevelControl, sink: LogSink = .stderr,
        metadataProvider: Logger.MetadataProvider? = nil,
        clock: @escaping @Sendable () -> Int64 = { MonotonicClock.wallMicros() }
    ) {
        self.label = label
        self.format = format
        self.control = control
        self.sink = sink
        self.metadataProvider = metadataProvider
        self.clock = clock
    }

    var logLevel: Logger.Level {
        get { localLevel ?? control.level }
        set { localLevel = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        if let error = event.error { merged["error"] = .string("\(error)") }
        sink.write(line(level: event.level, message: event.message.description, metadata: merged))
    }

    /// The finished line, newline included.
    func line(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var text: String
        switch format {
        case .journal:
            text = "<\(Self.priority(level))>"
        case .plain:
            text = TimeFormat.iso8601(micros: clock()) + " " + level.rawValue + " "
        }
        text +=
            TerminalText.escaped(label, limit: TerminalText.logLimit) + ": "
            + TerminalText.escaped(message, limit: Self.messageLimit)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            text += " " + Self.token(key) + "=" + Self.token(Self.render(value))
        }
        return text + "\n"
    }

    /// syslog priorities, as journald reads them from a `<N>` prefix.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    private static func render(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text): text
        case .stringConvertible(let value): value.description
        case .array(let values): "[" + values.map(render).joined(separator: ",") + "]"
        case .dictionary(let values):
            "{" + values.sorted { $0.key < $1.key }.map { $0.key + ":" + render($0.value) }.joined(separator: ",") + "}"
        }
    }

    /// A metadata key or value: bare when it is a simple token, else quoted with `\"` and `\\`;
    /// what `TerminalText` escapes is always escaped. Cut at `TerminalText.logLimit` bytes with `…`.
    static func token(_ text: String) -> String {
        let bare =
            !text.isEmpty && text.utf8.count <= TerminalText.logLimit
            && text.unicodeScalars.allSatisfy {
                $0.value > 0x20 && !TerminalText.needsEscape($0) && $0 != "\"" && $0 != "\\" && $0 != "="
            }
        if bare { return text }
        var result = "\""
        var bytes = 0
        for scalar in text.unicodeScalars {
            let piece =
                switch scalar {
                case "\"": "\\\""
                case "\\": "\\\\"
                default: TerminalText.escaped(String(scalar))
                }
            bytes += piece.utf8.count
            if bytes > TerminalText.logLimit { return result + TerminalText.ellipsis + "\"" }
            result += piece
        }
        return result + "\""
    }
}

/// Sets up swift-log for the daemon.
package enum DaemonLogging {
    private static let bootstrapped = Mutex<LogLevelControl?>(nil)

    /// A level control and the handler factory `bootstrap` installs: `StderrLogHandler`s writing to
    /// `sink`, in the journal format when systemd connected stderr to the journal.
    static func makeFactory(level: Logger.Level, environment: [String: String], sink: LogSink = .stderr)
        -> (control: LogLevelControl, factory: @Sendable (String) -> any LogHandler)
    {
        let control = LogLevelControl(level)
        let format = LogFormat.detect(environment: environment)
        return (control, { label in StderrLogHandler(label: label, format: format, control: control, sink: sink) })
    }

    /// Makes every `Logger` write to stderr through `StderrLogHandler`. Returns the level control a
    /// reload changes (`control.level = plan.configuration.log.level`). swift-log allows one
    /// bootstrap per process: only the first call bootstraps; later calls set the level and return
    /// the same control.
    @discardableResult
    package static func bootstrap(level: Logger.Level, environment: [String: String] = ProcessEnvironment.current())
        -> LogLevelControl
    {
        bootstrapped.withLock { existing in
            if let existing {
                existing.level = level
                return existing
            }
            let (control, factory) = makeFactory(level: level, environment: environment)
            LoggingSystem.bootstrap(factory)
            existing = control
            return control
        }
    }
}

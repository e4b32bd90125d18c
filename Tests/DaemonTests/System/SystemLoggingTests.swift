import BeacondTestSupport
import Foundation
import Logging
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Collects what a log handler writes.
final class CapturedLines: Sendable {
    private let storage = Mutex<[String]>([])

    var lines: [String] { storage.withLock { $0 } }

    var sink: LogSink { LogSink { line in self.storage.withLock { $0.append(line) } } }

    /// A "beacond" logger writing journal lines at info and above into these lines.
    func journalLogger() -> Logger {
        Logger(label: "beacond") { label in
            StderrLogHandler(label: label, format: .journal, control: LogLevelControl(.info), sink: self.sink)
        }
    }
}

@Suite struct SystemLoggingTests {
    /// 2026-05-16T12:00:10.250Z
    static let fixedTime: Int64 = 1_778_932_810_250_000

    /// What the test's loggers write (Swift Testing makes a suite value for each test).
    let captured = CapturedLines()

    /// A "beacond.test" logger at the fixed time, writing into `captured`.
    func logger(_ format: LogFormat, level: Logger.Level = .info, control: LogLevelControl? = nil) -> Logger {
        let control = control ?? LogLevelControl(level)
        return Logger(label: "beacond.test") { [captured] label in
            StderrLogHandler(
                label: label, format: format, control: control, sink: captured.sink,
                clock: { Self.fixedTime })
        }
    }

    @Test func plainLinesCarryATimestampAndLevel() {
        let log = logger(.plain)
        log.info("remote state fetched", metadata: ["url": "http://127.0.0.1:8080/state", "status": "200"])
        log.warning("remote failing")
        #expect(
            captured.lines == [
                """
                2026-05-16T12:00:10.250Z info beacond.test: remote state fetched status=200 \
                url=http://127.0.0.1:8080/state\n
                """,
                "2026-05-16T12:00:10.250Z warning beacond.test: remote failing\n",
            ])
    }

    @Test func journalLinesCarryPriorityPrefixesAndNoTimestamp() {
        let log = logger(.journal, level: .trace)
        log.critical("c")
        log.error("e")
        log.warning("w")
        log.notice("n")
        log.info("i")
        log.debug("d")
        log.trace("t")
        #expect(
            captured.lines == [
                "<2>beacond.test: c\n", "<3>beacond.test: e\n", "<4>beacond.test: w\n", "<5>beacond.test: n\n",
                "<6>beacond.test: i\n", "<7>beacond.test: d\n", "<7>beacond.test: t\n",
            ])
    }

    @Test func controlCharactersCannotDriveTheTerminal() {
        let log = logger(.plain)
        log.info(
            "remote says \u{1B}[2J\nFAKE LINE\u{7}\u{9B}",
            metadata: [
                "message": "green\r\nflag \"quoted\" \\",
                "name": .array(["a\u{1B}", "b"]),
            ])
        #expect(captured.lines.count == 1)
        let line = captured.lines[0]
        #expect(
            line == "2026-05-16T12:00:10.250Z info beacond.test: remote says \\u{1b}[2J\\u{a}FAKE LINE\\u{7}\\u{9b} "
                + "message=\"green\\u{d}\\u{a}flag \\\"quoted\\\" \\\\\" name=\"[a\\u{1b},b]\"\n")
        // One line, and no raw control character anywhere before its newline.
        #expect(line.dropLast().unicodeScalars.allSatisfy { $0.value >= 0x20 && !(0x7F...0x9F).contains($0.value) })
    }

    @Test func bidiControlsAndLineSeparatorsAreEscapedInMessageAndMetadata() {
        let log = logger(.journal)
        log.info(
            "device \u{202E}galf der\u{2028}next\u{2029}",
            metadata: [
                "name": "a\u{2066}b\u{2069}", "key\u{202A}": "v",
            ])
        #expect(
            captured.lines == [
                "<6>beacond.test: device \\u{202e}galf der\\u{2028}next\\u{2029} \"key\\u{202a}\"=v "
                    + "name=\"a\\u{2066}b\\u{2069}\"\n"
            ])
    }

    @Test func longMetadataValuesAndMessagesAreCutWithAnEllipsis() {
        let log = logger(.journal)
        log.info("\(String(repeating: "m", count: 3000))", metadata: ["body": "\(String(repeating: "v", count: 700))"])
        let line = captured.lines[0]
        let message = String(repeating: "m", count: StderrLogHandler.messageLimit)
        #expect(line.hasPrefix("<6>beacond.test: " + message + "… "))
        #expect(line.hasSuffix(" body=\"" + String(repeating: "v", count: 512) + "…\"\n"))
        // A value that fits is not cut.
        log.info("short", metadata: ["body": "\(String(repeating: "v", count: 512))"])
        #expect(captured.lines[1] == "<6>beacond.test: short body=" + String(repeating: "v", count: 512) + "\n")
    }

    @Test func levelFollowsTheSharedControlUnlessSetLocally() {
        let control = LogLevelControl(.info)
        let log = logger(.journal, control: control)
        var quiet = logger(.journal, control: control)
        quiet.logLevel = .error
        log.debug("hidden")
        control.level = .debug
        log.debug("shown")
        quiet.warning("still hidden")
        #expect(log.logLevel == .debug)
        #expect(quiet.logLevel == .error)
        #expect(captured.lines == ["<7>beacond.test: shown\n"])
    }

    @Test func metadataMergesHandlerAndMessageValuesSorted() {
        var log = logger(.journal)
        log[metadataKey: "zone"] = "3"
        log[metadataKey: "source"] = "beacon"
        log.info("state", metadata: ["zone": "4", "seq": "12", "empty": ""])
        #expect(captured.lines == ["<6>beacond.test: state empty=\"\" seq=12 source=beacon zone=4\n"])
    }

    @Test func journalFormatNeedsJournalStreamToMatchStderr() throws {
        let directory = try TemporaryDirectory(prefix: "beacond-journal")
        let fd = open(directory.file("stderr"), O_CREAT | O_RDWR, 0o600)
        try #require(fd >= 0)
        defer { withExtendedLifetime(directory) { _ = close(fd) } }
        let value = try #require(LogFormat.journalStreamValue(for: fd))
        #expect(LogFormat.detect(environment: [:], stderr: fd) == .plain)
        #expect(LogFormat.detect(environment: ["JOURNAL_STREAM": value], stderr: fd) == .journal)
        #expect(LogFormat.detect(environment: ["JOURNAL_STREAM": "1:2"], stderr: fd) == .plain)
        #expect(LogFormat.detect(environment: ["JOURNAL_STREAM": "garbage"], stderr: fd) == .plain)
        #expect(LogFormat.detect(environment: ["JOURNAL_STREAM": value], stderr: -1) == .plain)
    }

    @Test func bootstrapFactoryFollowsTheEnvironmentAndTheControl() {
        // LoggingSystem.bootstrap itself is once per process, so the test drives the factory it installs.
        let (control, factory) = DaemonLogging.makeFactory(level: .notice, environment: [:], sink: captured.sink)
        let log = Logger(label: "beacond.boot", factory: factory)
        log.info("hidden")
        log.notice("shown")
        control.level = .info
        log.info("now shown")
        #expect(captured.lines.count == 2)
        #expect(captured.lines.allSatisfy { $0.dropFirst(24).hasPrefix(" ") && !$0.hasPrefix("<") })
        #expect(
            captured.lines.map { $0.split(separator: " ", maxSplits: 1).last.map(String.init) }
                == ["notice beacond.boot: shown\n", "info beacond.boot: now shown\n"])
    }
}

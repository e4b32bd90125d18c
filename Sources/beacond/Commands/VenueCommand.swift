import ArgumentParser
import BLEPayload
import BeacondClient
import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct VenueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "venue",
        abstract: "Show every node's state from the MQTT broker: race control's and staff's view of the venue.",
        discussion: """
            Subscribes to PREFIX/+/state and PREFIX/+/status \
            (\(DocumentationPath.named("mqtt.md"))) and shows one row per node: \
            mode, source, zone, age and online. A node is flagged (!) when it is offline, its state was \
            not sent again within 45 s (nodes republish every 30 s), its state was refused (its node is \
            not the topic's, or seq or ts went back within its run), is unreadable, oversize or missing, \
            its status is neither online nor offline, a time is ahead of this machine's clock, or its \
            race-control part (last_updated) lags the newest any node reports by more than 5 s. \
            Evacuations are listed first and always kept when the 4,096-node table is full. The \
            table is redrawn every second until Ctrl-C; --once prints it once, --json prints one JSON \
            snapshot. Exits 1 when the broker cannot be reached within --timeout.
            """
    )

    @Option(help: ArgumentHelp("The broker: mqtt://host:1883 or mqtts://host:8883.", valueName: "url"))
    var mqttURL: String

    @Option(help: ArgumentHelp("Topic prefix (mqtt.topic_prefix).", valueName: "prefix"))
    var topicPrefix = MqttTopics.defaultPrefix

    @Option(help: ArgumentHelp("PEM CA certificates for mqtts:// (default: the system's).", valueName: "file"))
    var caFile: String?

    @Option(help: ArgumentHelp("MQTT user name.", valueName: "name"))
    var username: String?

    @Option(help: ArgumentHelp("File holding the MQTT password (its first line).", valueName: "file"))
    var passwordFile: String?

    @Option(help: ArgumentHelp("MQTT client id (default: beacond-venue-PID).", valueName: "id"))
    var clientID: String?

    @Flag(help: "Print one JSON snapshot of every node and exit.")
    var json = false

    @Flag(help: "Print the table once and exit.")
    var once = false

    @Option(
        help: ArgumentHelp("Seconds to wait for the broker, 0.001 to 3600.", valueName: "seconds"),
        transform: SecondsArgument.parser(.statusTimeout))
    var timeout = SecondsArgument(micros: 5_000_000)

    func validate() throws {
        do throws(MqttURL.Problem) {
            _ = try MqttURL(parsing: mqttURL)
        } catch {
            throw ValidationError("--mqtt-url: \(error.reason)")
        }
        if let problem = MqttTopicText.prefixProblem(topicPrefix) {
            throw ValidationError("--topic-prefix: \(problem)")
        }
        if passwordFile != nil, username == nil { throw ValidationError("--password-file needs --username") }
        if caFile != nil, !mqttURL.lowercased().hasPrefix("mqtts://") {
            throw ValidationError("--ca-file is for mqtts:// URLs")
        }
        // Checked as the daemon checks mqtt.ca_file and mqtt.password_file: a FIFO or a device is a bad
        // value (64), refused before anything opens it.
        for (flag, path) in [("--ca-file", caFile), ("--password-file", passwordFile)] {
            guard let path else { continue }
            do throws(RegularFile.OpenError) {
                try RegularFile.check(path)
            } catch {
                throw ValidationError("\(flag) \(path): \(error)")
            }
        }
    }

    func run() throws {
        let watcher: VenueWatcher
        do {
            var settings = VenueWatcher.Settings(
                url: try MqttURL(parsing: mqttURL), clientID: clientID ?? "beacond-venue-\(getpid())")
            settings.prefix = topicPrefix
            settings.username = username
            settings.passwordFile = passwordFile
            settings.caFile = caFile
            watcher = try VenueWatcher(settings: settings)
            try watcher.start()
        } catch {
            printError("beacond venue: \(error)")
            throw ExitCode(1)
        }
        if let failure = watcher.waitForSnapshot(timeout: timeout.micros) {
            watcher.stop()
            printError("beacond venue: cannot reach the broker: \(failure)")
            throw ExitCode(1)
        }
        if json {
            let snapshot = watcher.snapshot
            FileHandle.standardOutput.write(Data(VenueReport.json(snapshot.rows, leftOut: snapshot.leftOut)))
        } else if once {
            let snapshot = watcher.snapshot
            print(VenueReport.table(snapshot.rows, color: isatty(1) == 1, leftOut: snapshot.leftOut), terminator: "")
        } else {
            let clear = isatty(1) == 1 ? "\u{1B}[H\u{1B}[2J" : ""
            while true {
                let snapshot = watcher.snapshot
                var text = clear + VenueReport.table(snapshot.rows, color: !clear.isEmpty, leftOut: snapshot.leftOut)
                if let failure = watcher.lastFailure { text += "broker: \(failure)\n" }
                FileHandle.standardOutput.write(Data(text.utf8))
                Self.waitForNextDraw(watcher)
            }
        }
        watcher.stop()
    }

    /// The live view is drawn again within a quarter of a second of a message (an evacuation shows
    /// at once) and at least once a second (ages and staleness move on): both are waits on the
    /// watcher's activity, never a sleep.
    private static func waitForNextDraw(_ watcher: VenueWatcher) {
        let drawn = MonotonicClock.micros()
        var changed = false
        while true {
            let due = drawn + (changed ? 250_000 : 1_000_000)
            let now = MonotonicClock.micros()
            guard now < due else { return }
            if watcher.waitForActivity(micros: due - now) { changed = true }
        }
    }
}

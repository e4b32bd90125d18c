import ArgumentParser
import BLEPayload
import BeacondClient
import BeacondCore
import CircuitState

/// The flags that feed a capture through the fusion engine, shared by `replay --timeline` and
/// `report`: the company id, the remote timeline, the policy and the fusion and signing keys, each
/// parsed by its config key's parser (ConfigKey.spec), with the same ranges as `run`.
struct TimelineOptions: ParsableArguments {
    @Option(
        name: .configKey(.scannerCompanyID),
        help: ArgumentHelp("GeoRacing company id, decimal or 0x hex.", valueName: "id"),
        transform: ConfigFlag.checked(.scannerCompanyID))
    var companyID = ConfigFlag.defaultValue(.scannerCompanyID)

    @Option(
        name: .customLong("remote-timeline"),
        help: ArgumentHelp(
            "JSON lines of remote fetches: {\"ts\", \"state\"} or {\"ts\", \"error\"}.",
            valueName: "file"))
    var remoteTimeline: String?

    @Option(help: "Fusion policy: safety, beacon-first or most-severe.")
    var policy: Policy = .safety

    // The fusion flags are their config keys' (ConfigKey.spec): the same parsers and ranges as `run`.
    @Option(
        name: .configKey(.fusionMinRSSI), parsing: .unconditional,
        help: ArgumentHelp("Ignore overrides weaker than this, dBm, -127 to 20.", valueName: "dbm"),
        transform: ConfigFlag.checked(.fusionMinRSSI))
    var minRSSI = ConfigFlag.defaultValue(.fusionMinRSSI)

    @Option(
        name: .configKey(.remoteStaleAfter),
        help: ArgumentHelp("Seconds a remote fetch stays fresh, 0.1 to 86400.", valueName: "seconds"),
        transform: ConfigFlag.checked(.remoteStaleAfter))
    var staleAfter = ConfigFlag.defaultValue(.remoteStaleAfter)

    /// `run` has no flag for `fusion.max_ttl`: the name is replay's own, the parser the key's.
    @Option(
        name: .customLong("max-ttl"),
        help: ArgumentHelp(
            "Longest an override stays active, seconds, 0.1 to 86400.",
            valueName: "seconds"),
        transform: ConfigFlag.checked(.fusionMaxTTL))
    var maxTTL = ConfigFlag.defaultValue(.fusionMaxTTL)

    @Option(
        name: .configKey(.fusionDeescalationHold),
        help: ArgumentHelp(
            "Seconds a lowered or cleared beacon claim stays in force, 0.1 to 10.",
            valueName: "seconds"),
        transform: ConfigFlag.checked(.fusionDeescalationHold))
    var deescalationHold = ConfigFlag.defaultValue(.fusionDeescalationHold)

    @Option(
        name: .configKey(.fusionZones),
        help: ArgumentHelp(
            "Zones whose beacons may override, comma-separated; default all.",
            valueName: "list"),
        transform: ConfigFlag.checked(.fusionZones))
    var zones: ConfigFlag?

    @Option(
        name: .configKey(.securityKeyFile),
        help: ArgumentHelp("Venue keys that verify signed v3 frames.", valueName: "file"),
        transform: ConfigFlag.checked(.securityKeyFile))
    var keyFile: ConfigFlag?

    @Option(
        name: .configKey(.securityUnsigned),
        help: ArgumentHelp("What unsigned frames count for: accept or reject.", valueName: "policy"),
        transform: ConfigFlag.checked(.securityUnsigned))
    var unsigned: ConfigFlag?

    @Option(
        name: .configKey(.securityClockWindow),
        help: ArgumentHelp(
            "Seconds a v3 frame's clock may differ from the capture's, 1 to 3600.", valueName: "seconds"),
        transform: ConfigFlag.checked(.securityClockWindow))
    var clockWindow: ConfigFlag?

    /// Whether a flag that only verification reads was given.
    var verifies: Bool { keyFile != nil || unsigned != nil || clockWindow != nil }

    /// The company id and fusion settings, from the flags checked by their keys' parsers.
    func checkedSettings(command: String) throws -> DaemonConfiguration {
        do throws(ConfigurationError) {
            return try DaemonOverrides([
                companyID, minRSSI, staleAfter, maxTTL, deescalationHold, zones, keyFile, unsigned, clockWindow,
            ])
            .applied(to: DaemonConfiguration())
        } catch {
            printError("beacond \(command): \(error)")
            throw ExitCode(error.exitCode)
        }
    }

    /// `--remote-timeline`, read and checked; exit 1 naming the file and line when it is bad.
    func loadRemoteTimeline(command: String) throws -> RemoteTimeline? {
        do {
            return try remoteTimeline.map { try RemoteTimeline(path: $0) }
        } catch {
            printError("beacond \(command): error: \(error)")
            throw ExitCode(1)
        }
    }

    /// The replay these flags configure: policy, fusion settings and the venue keys.
    func timelineReplay(
        _ settings: DaemonConfiguration, json: Bool, output: OutputStream, command: String
    ) throws -> TimelineReplay {
        var configuration = settings.fusionConfiguration()
        configuration.policy = policy
        let companyID = settings.scanner.companyID
        let keyring = try loadVenueKeys(settings.security.keyFile, command: command)
        return TimelineReplay(
            configuration: configuration, decoder: GeoRacingDecoder(companyID: companyID), json: json,
            output: output, authenticator: keyring.map { VenueAuthenticator(keyring: $0, companyID: companyID) },
            clockWindow: settings.security.clockWindow)
    }
}

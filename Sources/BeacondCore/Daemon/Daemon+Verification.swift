import CircuitState
import Logging

/// `beacond run`'s v3 verification (docs/security.md): the key file in force, the senders' marks
/// across restarts, and the key file read again on every SIGHUP.
extension Daemon {
    /// Hands the hub its authenticator and clock window, and restores the saved marks.
    static func startVerification(
        hub: TrackStateHub, configuration: DaemonConfiguration, keyring: VenueKeyring?, logger: Logger
    ) throws {
        let security = configuration.security
        let authenticator = keyring.map { VenueAuthenticator(keyring: $0, companyID: configuration.scanner.companyID) }
        let marks = SignedMarkFile(directory: configuration.stateDir).load(logger: logger)
        let wallClock = hub.clock.wallMicros(at: hub.clock.now())
        try hub.eventLoop.submit {
            hub.setVerification(authenticator: authenticator, clockWindow: security.clockWindow)
            hub.restoreSignedMarks(marks, wallClock: wallClock)
        }.wait()
        if !marks.isEmpty { logger.info("restored the v3 order marks of \(marks.count) senders") }
        if keyring == nil, security.unsigned == .reject {
            logger.warning("security.unsigned is reject and there is no key file: no beacon frame can count")
        }
    }

    var markService: SignedMarkService {
        SignedMarkService(hub: hub, file: SignedMarkFile(directory: configuration.stateDir), logger: logger)
    }

    /// SIGHUP: the key file is read again, changed or not (keys rotate without a config change).
    /// A file that cannot be used keeps the keys in force.
    func reloadVerification(_ security: DaemonConfiguration.Security) async {
        var keyring: VenueKeyring?
        if let path = security.keyFile {
            do throws(VenueKeyFileError) {
                keyring = try VenueKeyFile.load(path)
            } catch {
                logger.error("reload: key file refused, keeping the keys in force: \(error)")
                return
            }
        }
        let authenticator = keyring.map { VenueAuthenticator(keyring: $0, companyID: configuration.scanner.companyID) }
        let hub = hub
        try? await hub.eventLoop.submit {
            hub.setVerification(authenticator: authenticator, clockWindow: security.clockWindow)
        }.get()
        keyStatus.update(path: security.keyFile, keyring: keyring)
        let source = security.keyFile.map { "read again from \($0)" } ?? "none (no security.key_file)"
        logger.info("reload: v3 keys \(source)")
    }
}

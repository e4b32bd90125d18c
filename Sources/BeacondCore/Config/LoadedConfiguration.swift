/// Which file a configuration was read from, and the SHA-256 of the exact bytes parsed
/// (`status.config`, docs/configuration.md "Reloading").
package struct ConfigFileIdentity: Hashable, Sendable {
    package var path: String
    package var sha256: SHA256Digest

    package init(path: String, sha256: SHA256Digest) {
        self.path = path
        self.sha256 = sha256
    }
}

/// A configuration as `beacond run` loads it (the file, then the flags on top), with the file's
/// identity; `file` is nil when the daemon runs without a config file.
package struct LoadedConfiguration: Sendable {
    package var configuration: DaemonConfiguration
    package var file: ConfigFileIdentity?

    package init(configuration: DaemonConfiguration, file: ConfigFileIdentity?) {
        self.configuration = configuration
        self.file = file
    }
}

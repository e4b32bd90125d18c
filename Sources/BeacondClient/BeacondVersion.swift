/// The release this build is: `beacond --version`, the `hello` message, and the remote poller's
/// User-Agent all say it.
package enum BeacondVersion {
    package static let current = "0.1.0"
}

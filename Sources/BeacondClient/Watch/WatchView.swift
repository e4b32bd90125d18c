/// What `beacond watch` shows at one moment, as one value: the daemon's (or the replay's) latest
/// status, or why there is none, and the staff member's choices. `WatchScreen` draws it.
package struct WatchView: Hashable, Sendable {
    /// Where the status comes from, for the title: the socket path, or the capture replayed.
    package var source: String
    /// The latest status; nil before the first one and whenever the source is lost, so a table
    /// that is no longer current is never shown as if it were.
    package var status: StatusMessage?
    /// Why there is no current status (the daemon unreachable, the replay failed); nil otherwise.
    package var problem: String?
    package var sort: WatchSort
    /// `--all`: the devices that are not GeoRacing beacons too.
    package var showsDevices: Bool
    /// Whether keys work (the title then says which).
    package var interactive: Bool

    package init(
        source: String, status: StatusMessage? = nil, problem: String? = nil, sort: WatchSort = .key,
        showsDevices: Bool = false, interactive: Bool = false
    ) {
        self.source = source
        self.status = status
        self.problem = problem
        self.sort = sort
        self.showsDevices = showsDevices
        self.interactive = interactive
    }
}

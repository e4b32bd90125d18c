import Glibc

/// The open-file limit and the clients it leaves room for.
extension TrackStateServer {
    /// How many clients fit in `descriptorLimit` open files when `openDescriptors` are open at
    /// start: each client takes two (NIO's and the direct writes' duplicate), and an eighth of the
    /// limit (at least 16) stays free for the daemon's own later files (a replay's capture, state
    /// files, metrics and MQTT connections), so clients can never starve it of descriptors. A
    /// limit that cannot be read (-1) leaves `maxClients` as it is.
    static func clientCap(maxClients: Int, descriptorLimit: Int, openDescriptors: Int) -> Int {
        guard descriptorLimit > 0 else { return maxClients }
        let kept = max(16, descriptorLimit / 8)
        let free = descriptorLimit - max(0, openDescriptors) - kept
        return min(maxClients, max(1, free / 2))
    }

    /// Descriptors this process has open now (/proc/self/fd), 0 when it cannot be read.
    static func openDescriptorCount() -> Int {
        // Not counting the descriptor of the listing itself.
        max(0, (DirectoryEntries.list("/proc/self/fd")?.count ?? 0) - 1)
    }

    /// Raises the soft RLIMIT_NOFILE to the hard limit, so `max_clients` is reachable.
    /// Returns the soft limit in force afterwards.
    @discardableResult
    package static func raiseOpenFileLimit() -> Int {
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return -1 }
        guard limit.rlim_cur < limit.rlim_max else { return Int(clamping: limit.rlim_cur) }
        var raised = limit
        raised.rlim_cur = limit.rlim_max
        if setrlimit(resource, &raised) == 0 { return Int(clamping: raised.rlim_cur) }
        // An infinite hard limit may be refused (it is capped by fs.nr_open): try a large finite one.
        raised.rlim_cur = min(limit.rlim_max, 1 << 20)
        if setrlimit(resource, &raised) == 0 { return Int(clamping: raised.rlim_cur) }
        return Int(clamping: limit.rlim_cur)
    }
}

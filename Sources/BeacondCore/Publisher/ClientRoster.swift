import NIOCore

/// The connected clients, by id and by peer user id, and who makes room when the server is full.
///
/// Fair share (docs/protocol.md, "Limits"): when `max_clients` are connected, a client whose user
/// holds fewer connections than the user holding the most is still admitted; the longest-idle
/// connection of the user holding the most is closed for it. A flood of connections from one user
/// can therefore never lock out another, while one user alone may still use every place.
/// Confined to the hub's event loop.
struct ClientRoster {
    /// The uid of a peer whose credentials could not be read ((uid_t)-1, never a real user).
    static let unknownUID = UInt32.max

    private(set) var sessions: [Int: ClientSession] = [:]
    private var connectionsByUID: [UInt32: Int] = [:]

    var count: Int { sessions.count }

    func connections(of uid: UInt32) -> Int { connectionsByUID[uid] ?? 0 }

    mutating func add(_ session: ClientSession) {
        guard sessions.updateValue(session, forKey: session.id) == nil else { return }
        connectionsByUID[session.uid, default: 0] += 1
    }

    /// Removes the client if it is still here (it may already have been evicted); returns it.
    @discardableResult
    mutating func remove(id: Int) -> ClientSession? {
        guard let session = sessions.removeValue(forKey: id) else { return nil }
        let left = connections(of: session.uid) - 1
        connectionsByUID[session.uid] = left > 0 ? left : nil
        return session
    }

    /// The connection to close so that a client of `uid` can be admitted to a full server: the
    /// longest-idle connection (oldest last request) of the user holding the most connections;
    /// nil when `uid` already holds as many as any other user.
    func fairShareVictim(for uid: UInt32) -> ClientSession? {
        guard let most = connectionsByUID.values.max(), connections(of: uid) < most else { return nil }
        var victim: ClientSession?
        for session in sessions.values where connections(of: session.uid) == most {
            if let chosen = victim, (chosen.lastActivity, chosen.id) <= (session.lastActivity, session.id) {
                continue
            }
            victim = session
        }
        return victim
    }
}

/// A connection that takes a place in a `FairShareRoster`.
package protocol FairShareMember: AnyObject {
    associatedtype Owner: Hashable
    var id: Int { get }
    /// Who holds the connection: the peer's user id (from the kernel), or what stands for it.
    var owner: Owner { get }
    /// When the connection last sent a request (or connected), NIODeadline uptime nanoseconds: the
    /// longest-idle connection is the one with the oldest.
    var lastActivity: UInt64 { get }
}

/// Connections by id and by owner, and who makes room when the places are all taken.
///
/// Fair share (docs/protocol.md, "Limits"; docs/security.md): when every place is taken, a newcomer
/// whose owner holds fewer connections than the owner holding the most is still admitted; the
/// longest-idle connection of the owner holding the most is closed for it. A flood of connections
/// from one user can therefore never lock out another, while one user alone may still use every
/// place. Used by the socket server (owner: SO_PEERCRED's uid) and the HTTP listeners (owner: the
/// loopback peer's uid from the kernel's socket table, `HTTPPeer`). Confined to one event loop.
package struct FairShareRoster<Member: FairShareMember> {
    package private(set) var members: [Int: Member] = [:]

    package init() {}
    private var connectionsByOwner: [Member.Owner: Int] = [:]

    package var count: Int { members.count }

    package func connections(of owner: Member.Owner) -> Int { connectionsByOwner[owner] ?? 0 }

    package mutating func add(_ member: Member) {
        guard members.updateValue(member, forKey: member.id) == nil else { return }
        connectionsByOwner[member.owner, default: 0] += 1
    }

    /// Removes the member if it is still here (it may already have been evicted); returns it.
    @discardableResult
    package mutating func remove(id: Int) -> Member? {
        guard let member = members.removeValue(forKey: id) else { return nil }
        let left = connections(of: member.owner) - 1
        connectionsByOwner[member.owner] = left > 0 ? left : nil
        return member
    }

    /// The connection to close so that a newcomer of `owner` can be admitted to a full roster: the
    /// longest-idle connection (oldest last request) of the owner holding the most connections;
    /// nil when `owner` already holds as many as any other. A nil `owner` (nobody in particular:
    /// making room when descriptors ran out) always gets the top holder's longest-idle connection.
    package func fairShareVictim(for owner: Member.Owner?) -> Member? {
        guard let most = connectionsByOwner.values.max() else { return nil }
        if let owner, connections(of: owner) >= most { return nil }
        var victim: Member?
        for member in members.values where connections(of: member.owner) == most {
            if let chosen = victim, (chosen.lastActivity, chosen.id) <= (member.lastActivity, member.id) {
                continue
            }
            victim = member
        }
        return victim
    }
}

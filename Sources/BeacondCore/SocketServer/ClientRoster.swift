import NIOCore

/// The socket server's clients, by peer uid (SO_PEERCRED).
typealias ClientRoster = FairShareRoster<ClientSession>

extension FairShareRoster where Member == ClientSession {
    /// The uid of a peer whose credentials could not be read ((uid_t)-1, never a real user).
    static var unknownUID: UInt32 { UInt32.max }

    var sessions: [Int: ClientSession] { members }
}

extension ClientSession: FairShareMember {
    var owner: UInt32 { uid }
}

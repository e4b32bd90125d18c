import Synchronization

/// `status.signed`'s key file part: the file in force and its key ids. A reload replaces them.
final class VenueKeyStatus: StatusContributor, Sendable {
    private let state: Mutex<(path: String?, keyIDs: [Int])>

    init(path: String?, keyring: VenueKeyring?) {
        state = Mutex((path, Self.ids(keyring)))
    }

    func update(path: String?, keyring: VenueKeyring?) {
        state.withLock { $0 = (path, Self.ids(keyring)) }
    }

    func contribute(to status: inout StatusMessage, for query: StatusQuery) {
        let (path, ids) = state.withLock { $0 }
        status.signed?.keyFile = path
        status.signed?.keyIDs = ids
    }

    private static func ids(_ keyring: VenueKeyring?) -> [Int] {
        keyring?.keyIDs.map(Int.init) ?? []
    }
}

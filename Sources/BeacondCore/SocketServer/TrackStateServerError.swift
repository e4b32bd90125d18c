import Glibc

/// Why the socket server cannot start.
package enum TrackStateServerError: Error, CustomStringConvertible {
    case invalidPath(SocketPathError)
    /// A daemon already answers on the socket.
    case alreadyRunning(path: String)
    /// Something that is not a socket sits at the path; it is left alone.
    case notASocket(path: String)
    /// The existing file could not be probed or removed.
    case cannotReplace(path: String, reason: String)
    case bindFailed(path: String, reason: String)
    /// The socket's directory is missing (ENOENT) or not ours to write (EACCES): say what to do.
    case directoryUnusable(path: String, code: Int32)
    case chmodFailed(path: String, reason: String)
    case alreadyStarted

    package var description: String {
        switch self {
        case .invalidPath(let error):
            "\(error)"
        case .alreadyRunning(let path):
            "another beacond is already listening on \(path); stop it first, or use another --socket path"
        case .notASocket(let path):
            "\(path) exists and is not a socket; refusing to replace it"
        case .cannotReplace(let path, let reason):
            "\(path) exists and cannot be checked or removed: \(reason)"
        case .bindFailed(let path, let reason):
            "cannot listen on \(path): \(reason)"
        case .directoryUnusable(let path, let code):
            Self.directoryHint(path: path, code: code)
        case .chmodFailed(let path, let reason):
            "cannot set mode 0660 on \(path): \(reason)"
        case .alreadyStarted:
            "the socket server was already started"
        }
    }
}

extension TrackStateServerError {
    /// What to do when the socket's directory cannot take it: the installed daemon's directory
    /// (/run/beacond) comes from `make install` (tmpfiles.d) and belongs to the beacond user.
    static func directoryHint(path: String, code: Int32) -> String {
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let shown = directory.isEmpty ? "." : directory
        let why =
            code == ENOENT
            ? "the directory \(shown) does not exist"
            : "the directory \(shown) is not writable by this user"
        let installed =
            path == TrackStateServer.defaultPath
            ? " It is the installed daemon's: `sudo make install` creates it for the beacond user, "
                + "which the systemd unit runs as (`sudo systemctl start beacond`)."
            : ""
        return "cannot listen on \(path): \(why).\(installed) To run beacond by hand, give it a socket in a "
            + "directory you can write: --socket /tmp/beacond.sock (and --state-dir /tmp)."
    }
}

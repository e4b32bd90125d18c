import Glibc

/// A `state_dir` that cannot hold the state file, in words ("state_dir /x is not a directory").
struct StateDirectoryError: Error, Hashable, Sendable, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}

/// Checks `state_dir` and says what is wrong with it, instead of a bare errno or Foundation code.
enum RemoteStateDirectory {
    /// What stops the state file being saved in `directory`; nil when it is a writable directory,
    /// or missing but creatable (the nearest existing ancestor is a writable directory).
    static func problem(_ directory: String) -> StateDirectoryError? {
        var info = stat()
        guard stat(directory, &info) == 0 else {
            let code = errno
            switch code {
            case ENOENT:
                return missingProblem(directory)
            case ENOTDIR:
                let parent = firstNonDirectoryAncestor(of: directory) ?? "a parent"
                return StateDirectoryError(reason: "state_dir \(directory) cannot exist: \(parent) is not a directory")
            default:
                return StateDirectoryError(reason: "state_dir \(directory) cannot be reached: \(errnoText(code))")
            }
        }
        guard isDirectory(info) else { return StateDirectoryError(reason: "state_dir \(directory) is not a directory") }
        guard access(directory, W_OK | X_OK) == 0 else {
            return StateDirectoryError(reason: "state_dir \(directory) is not writable (\(errnoText(errno)))")
        }
        return nil
    }

    /// A missing directory: fine when its nearest existing ancestor lets it be created.
    private static func missingProblem(_ directory: String) -> StateDirectoryError? {
        var ancestor = parent(of: directory)
        while let candidate = ancestor {
            var info = stat()
            if stat(candidate, &info) == 0 {
                guard isDirectory(info) else {
                    return StateDirectoryError(
                        reason: "state_dir \(directory) cannot be created: \(candidate) is not a directory")
                }
                guard access(candidate, W_OK | X_OK) == 0 else {
                    let why = "\(candidate) is not writable (\(errnoText(errno)))"
                    return StateDirectoryError(
                        reason: "state_dir \(directory) does not exist and cannot be created: \(why)")
                }
                return nil
            }
            ancestor = parent(of: candidate)
        }
        return nil
    }

    /// The shortest prefix of `path` that exists and is not a directory.
    private static func firstNonDirectoryAncestor(of path: String) -> String? {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            var info = stat()
            guard stat(prefix, &info) == 0 else { return nil }
            if !isDirectory(info) { return prefix.hasPrefix("./") ? String(prefix.dropFirst(2)) : prefix }
        }
        return nil
    }

    private static func parent(of path: String) -> String? {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return trimmed.isEmpty || trimmed == "." ? nil : "." }
        if slash == trimmed.startIndex { return trimmed.count > 1 ? "/" : nil }
        return String(trimmed[..<slash])
    }

    private static func isDirectory(_ info: stat) -> Bool { (info.st_mode & S_IFMT) == S_IFDIR }
}

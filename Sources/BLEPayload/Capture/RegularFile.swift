import Glibc

/// The one way beacond opens a file named from outside (a flag, a config key, a URL) for reading:
/// config files, CA files, passwords, tokens, captures, timelines, state files.
///
/// `open(2)` of a FIFO blocks until a writer comes, and reading a device such as `/dev/zero` never
/// ends: either would stall start-up, a reload or a poll. So the path is opened non-blocking
/// (a FIFO opens at once), and the descriptor, not the path, is checked with `fstat(2)`: only a
/// regular file (a symlink to one is fine) is kept; anything else is closed unread.
public enum RegularFile {
    /// What a path names, for an error that says so.
    public enum Kind: Hashable, Sendable, CustomStringConvertible {
        case regular, directory, fifo, characterDevice, blockDevice, socket, symbolicLink, unknown

        public init(mode: mode_t) {
            switch mode & S_IFMT {
            case S_IFREG: self = .regular
            case S_IFDIR: self = .directory
            case S_IFIFO: self = .fifo
            case S_IFCHR: self = .characterDevice
            case S_IFBLK: self = .blockDevice
            case S_IFSOCK: self = .socket
            case S_IFLNK: self = .symbolicLink
            default: self = .unknown
            }
        }

        public var description: String {
            switch self {
            case .regular: "a regular file"
            case .directory: "a directory"
            case .fifo: "a FIFO"
            case .characterDevice: "a character device"
            case .blockDevice: "a block device"
            case .socket: "a socket"
            case .symbolicLink: "a symbolic link"
            case .unknown: "not a file"
            }
        }
    }

    /// Why a path was not opened.
    public enum OpenError: Error, Hashable, Sendable, CustomStringConvertible {
        case open(errno: Int32)
        case stat(errno: Int32)
        /// The path names something else than a regular file: never read.
        case notRegular(Kind)

        public var description: String {
            switch self {
            case .open(let code): "cannot open: \(errnoDescription(code))"
            case .stat(let code): "cannot stat: \(errnoDescription(code))"
            case .notRegular(.unknown): "is not a regular file"
            case .notRegular(let kind): "is \(kind), not a regular file"
            }
        }
    }

    /// Opens `path` read-only (`O_NONBLOCK | O_CLOEXEC | O_NOCTTY`) and returns the descriptor of
    /// a regular file, with its `fstat` size; the caller closes it. Reads from a regular file do
    /// not care about `O_NONBLOCK`: they never return `EAGAIN`.
    public static func open(_ path: String) throws(OpenError) -> (descriptor: Int32, size: Int64) {
        let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw .open(errno: errno) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            throw .stat(errno: code)
        }
        let kind = Kind(mode: info.st_mode)
        guard kind == .regular else {
            close(fd)
            throw .notRegular(kind)
        }
        return (fd, Int64(info.st_size))
    }

    /// Checks that `path` opens as a regular file, and closes it: for a path another library opens
    /// itself later.
    public static func check(_ path: String) throws(OpenError) {
        close(try open(path).descriptor)
    }
}

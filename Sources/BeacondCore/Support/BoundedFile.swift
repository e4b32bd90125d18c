import Glibc

/// Why a bounded file read failed.
enum BoundedFileError: Error, Equatable {
    case open(Int32)
    case stat(Int32)
    /// A FIFO, a device such as `/dev/zero`, a directory: never read, so nothing can stall or flood.
    case notRegular
    case tooLarge
    case read(Int32)
}

/// Reads a regular file of at most `maxBytes` bytes, whatever it does meanwhile (grows, shrinks).
/// The buffer starts at the file's size, so a large cap costs nothing for a small file.
func readRegularFile(_ path: String, maxBytes: Int) throws(BoundedFileError) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
    guard fd >= 0 else { throw .open(errno) }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw .stat(errno) }
    guard (info.st_mode & S_IFMT) == S_IFREG else { throw .notRegular }
    guard info.st_size <= maxBytes else { throw .tooLarge }
    // One byte past the size seen, so a file that grew is noticed; grown up to `maxBytes + 1`.
    var buffer = [UInt8](repeating: 0, count: Int(max(0, info.st_size)) + 1)
    var filled = 0
    while true {
        if filled == buffer.count {
            guard buffer.count <= maxBytes else { break }
            buffer.append(contentsOf: repeatElement(0, count: min(buffer.count, maxBytes + 1 - buffer.count)))
        }
        let count = buffer.withUnsafeMutableBytes { raw -> Int in
            guard let base = raw.baseAddress else { return 0 }
            return read(fd, base + filled, raw.count - filled)
        }
        if count < 0 {
            if errno == EINTR { continue }
            throw .read(errno)
        }
        if count == 0 { break }
        filled += count
    }
    // The file grew between fstat and read.
    guard filled <= maxBytes else { throw .tooLarge }
    return Array(buffer[..<filled])
}

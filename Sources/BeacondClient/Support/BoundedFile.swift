import BLEPayload
import Glibc

/// Why a bounded file read failed.
package enum BoundedFileError: Error, Equatable, CustomStringConvertible {
    case open(Int32)
    case stat(Int32)
    /// A FIFO, a device such as `/dev/zero`, a directory: never read, so nothing can stall or flood.
    case notRegular(RegularFile.Kind)
    case tooLarge
    case read(Int32)

    init(_ error: RegularFile.OpenError) {
        switch error {
        case .open(let code): self = .open(code)
        case .stat(let code): self = .stat(code)
        case .notRegular(let kind): self = .notRegular(kind)
        }
    }

    /// What went wrong, to follow the path: "is a FIFO, not a regular file".
    package var description: String {
        switch self {
        case .open(let code): RegularFile.OpenError.open(errno: code).description
        case .stat(let code): RegularFile.OpenError.stat(errno: code).description
        case .notRegular(let kind): RegularFile.OpenError.notRegular(kind).description
        case .tooLarge: "is too large"
        case .read(let code): "cannot read: \(errnoText(code))"
        }
    }
}

/// Reads a regular file of at most `maxBytes` bytes, whatever it does meanwhile (grows, shrinks).
/// The buffer starts at the file's size, so a large cap costs nothing for a small file.
package func readRegularFile(_ path: String, maxBytes: Int) throws(BoundedFileError) -> [UInt8] {
    let bytes = try readRegularFilePrefix(path, maxBytes: maxBytes, refuseLarger: true)
    // The file grew between fstat and read.
    guard bytes.count <= maxBytes else { throw .tooLarge }
    return bytes
}

/// The first bytes of a regular file: all of it, or `maxBytes + 1` bytes when it is larger (the
/// one byte over says so, and where), for a caller that names the place the limit was passed.
/// `refuseLarger`: throw `.tooLarge` without reading when `fstat` already says it is too large.
package func readRegularFilePrefix(_ path: String, maxBytes: Int, refuseLarger: Bool = false) throws(BoundedFileError)
    -> [UInt8]
{
    let opened: (descriptor: Int32, size: Int64)
    do {
        opened = try RegularFile.open(path)
    } catch {
        throw BoundedFileError(error)
    }
    let fd = opened.descriptor
    defer { close(fd) }
    if refuseLarger && opened.size > maxBytes { throw .tooLarge }
    // One byte past the size seen, so a file that grew is noticed; grown up to `maxBytes + 1`.
    var buffer = [UInt8](repeating: 0, count: Int(min(max(0, opened.size), Int64(maxBytes))) + 1)
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
    return Array(buffer[..<filled])
}

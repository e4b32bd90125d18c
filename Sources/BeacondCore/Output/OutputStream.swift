import Glibc
import SystemPackage

/// A buffered writer to a file descriptor (stdout, stderr). A reader that went
/// away (EPIPE) is remembered, and further output is discarded.
package final class OutputStream {
    private let fd: Int32
    private let bufferLimit: Int
    private var buffer: [UInt8] = []
    package private(set) var readerGone = false

    package init(fd: Int32, bufferLimit: Int = 64 * 1024) {
        self.fd = fd
        self.bufferLimit = bufferLimit
        buffer.reserveCapacity(bufferLimit + 1024)
    }

    func write(_ bytes: [UInt8]) {
        buffer.append(contentsOf: bytes)
        if buffer.count > bufferLimit { flush() }
    }

    func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count > bufferLimit { flush() }
    }

    package func flush() {
        defer { buffer.removeAll(keepingCapacity: true) }
        guard !readerGone else { return }
        let descriptor = FileDescriptor(rawValue: fd)
        buffer.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                do {
                    let written = try descriptor.write(UnsafeRawBufferPointer(rebasing: raw[offset...]))
                    guard written > 0 else { break }
                    offset += written
                } catch Errno.wouldBlock {
                    // A non-blocking descriptor shared with the parent: wait until it drains.
                    var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&entry, 1, -1)
                } catch {
                    break
                }
            }
            if offset < raw.count { readerGone = true }
        }
    }
}

/// Writes one line to stderr at once.
package func printError(_ text: String) {
    OutputStream(fd: STDERR_FILENO, bufferLimit: 0).write(text + "\n")
}

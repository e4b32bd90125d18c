#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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
        var offset = 0
        buffer.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            while offset < raw.count {
                let written = Glibc.write(fd, base + offset, raw.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && (errno == EINTR || errno == EAGAIN) {
                    continue
                } else {
                    readerGone = true
                    return
                }
            }
        }
    }
}

/// Writes one line to stderr at once.
package func printError(_ text: String) {
    OutputStream(fd: STDERR_FILENO, bufferLimit: 0).write(text + "\n")
}

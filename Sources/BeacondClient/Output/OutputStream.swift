import Glibc

/// A buffered writer to a file descriptor (stdout, stderr): one buffer of its own, filled in
/// place (`cursor(reserving:)` and `commit(_:)`, or `write`), and written with write(2) once it
/// holds more than `bufferLimit` bytes (64 KiB by default; 0 writes every piece at once).
///
/// A partial write goes on from where it stopped; EINTR is retried; EAGAIN (a non-blocking
/// descriptor shared with the parent) waits in poll(2) for room. A reader that went away (EPIPE,
/// when SIGPIPE is ignored) or any other error is remembered in `readerGone`, and further output
/// is discarded.
package final class OutputStream {
    private let fd: Int32
    private let bufferLimit: Int
    private var storage: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private var count = 0
    package private(set) var readerGone = false

    package init(fd: Int32, bufferLimit: Int = 64 * 1024) {
        self.fd = fd
        self.bufferLimit = max(0, bufferLimit)
        // Room for one more piece of ordinary size past the limit before the flush.
        capacity = self.bufferLimit + 16 * 1024
        storage = .allocate(capacity: capacity)
    }

    deinit {
        storage.deallocate()
    }

    /// Room for at least `bound` more bytes, at the end of what is buffered; nothing counts as
    /// written until `commit(_:)`.
    func cursor(reserving bound: Int) -> ByteCursor {
        if capacity - count < bound {
            flush()
            if capacity < bound { grow(to: bound) }
        }
        return ByteCursor(start: storage + count, end: storage + capacity)
    }

    /// Keeps what `cursor` wrote, unless it overflowed (then false: write it again through a cursor
    /// reserving more than `cursor.capacity`). Flushes past `bufferLimit`.
    @discardableResult
    func commit(_ cursor: ByteCursor) -> Bool {
        guard !cursor.overflowed, cursor.start == storage + count else { return false }
        count += cursor.appendedCount
        if count > bufferLimit { flush() }
        return true
    }

    /// Writes whatever `body` appends, however long: a cursor reserving `bound` bytes first, more
    /// if that was not enough.
    func write(reserving bound: Int, _ body: (inout ByteCursor) -> Void) {
        var reserve = max(bound, 64)
        while true {
            var cursor = cursor(reserving: reserve)
            body(&cursor)
            if commit(cursor) { return }
            reserve = max(reserve, cursor.capacity) * 2
        }
    }

    package func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in write(reserving: raw.count) { $0.appendBytes(raw) } }
    }

    package func write(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in write(reserving: utf8.count) { $0.appendBytes(UnsafeRawBufferPointer(utf8)) } }
    }

    private func grow(to bound: Int) {
        let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: bound)
        larger.update(from: storage, count: count)
        storage.deallocate()
        storage = larger
        capacity = bound
    }

    package func flush() {
        defer { count = 0 }
        guard !readerGone, count > 0 else { return }
        var offset = 0
        while offset < count {
            let written = Glibc.write(fd, storage + offset, count - offset)
            if written > 0 {
                offset += written
                continue
            }
            let code = written < 0 ? errno : 0
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK {
                var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&entry, 1, -1)
                continue
            }
            // EPIPE, another error, or a write of 0: the reader is gone, and so is the rest.
            readerGone = true
            return
        }
    }
}

/// Writes one line to stderr at once.
package func printError(_ text: String) {
    OutputStream(fd: STDERR_FILENO, bufferLimit: 0).write(text + "\n")
}

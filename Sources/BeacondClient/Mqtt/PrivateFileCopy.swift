import Glibc

/// A private copy of a file that a library insists on opening by path (libmosquitto's
/// `mosquitto_tls_set` CA file, which it opens at setup and OpenSSL again at every connect).
///
/// beacond reads the file itself (`readRegularFile`: non-blocking, regular files only, capped) and
/// hands the library `/proc/self/fd/N`, the path of an unlinked temporary file holding those bytes.
/// Checking the path and then handing it over would leave a race for the whole run: the file
/// replaced by a FIFO before a reconnect would block the MQTT thread in `open(2)`. The copy is
/// nobody else's to replace, and it lives as long as this object.
final class PrivateFileCopy {
    let descriptor: Int32

    /// The path the library opens: the copy's descriptor, through procfs.
    var path: String { "/proc/self/fd/\(descriptor)" }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Reads `source` (at most `maxBytes`; 1 MiB holds any CA bundle) into an unlinked file in
    /// `directory`.
    init(of source: String, maxBytes: Int = 1 << 20, directory: String = "/tmp") throws(Failure) {
        let bytes: [UInt8]
        do {
            bytes = try readRegularFile(source, maxBytes: maxBytes)
        } catch .tooLarge {
            throw Failure(description: "\(source): the file is over \(maxBytes) bytes")
        } catch {
            throw Failure(description: "\(source): \(error)")
        }
        var template = Array("\(directory)/beacond-copy.XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return -1 }
            return mkstemp(base)
        }
        guard fd >= 0 else {
            throw Failure(description: "\(source): cannot make a private copy in \(directory): \(errnoText(errno))")
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        unlink(String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self))
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return write(fd, base + written, raw.count - written)
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                let code = count < 0 ? errno : EIO
                close(fd)
                throw Failure(description: "\(source): cannot write its private copy: \(errnoText(code))")
            }
            written += count
        }
        descriptor = fd
    }

    deinit { close(descriptor) }
}

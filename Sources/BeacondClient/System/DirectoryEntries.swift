import Glibc

/// The names in a directory, read from `readdir(3)` in place. A `dirent` record is only as long as
/// its name (`d_reclen`), so copying the struct's 256-byte `d_name` field can read past the end of
/// glibc's buffer and fault when that is the end of a mapping (seen in CI for /proc/self/fd).
package enum DirectoryEntries {
    private static let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19

    /// Each entry's name other than `.` and `..`, with its `d_type`; nil when it cannot be opened.
    package static func list(_ path: String) -> [(name: String, type: UInt8)]? {
        guard let directory = opendir(path) else { return nil }
        defer { closedir(directory) }
        var entries: [(name: String, type: UInt8)] = []
        while let entry = readdir(directory) {
            let name = String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
            if name != ".", name != ".." { entries.append((name, entry.pointee.d_type)) }
        }
        return entries
    }
}

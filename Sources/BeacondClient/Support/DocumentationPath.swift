import Glibc

/// Where the help text's documents are: `make install` puts them in `PREFIX/share/doc/beacond`
/// beside `PREFIX/bin/beacond`, so an installed binary names its own copy; a binary run from the
/// build folder names the source tree's `docs/` (issue 26: help pointed at `docs/` on a kiosk).
package enum DocumentationPath {
    /// `file` (such as "configuration.md") in the installed documentation beside `executable`
    /// when that folder exists, else in the source tree's `docs/`.
    package static func named(_ file: String, executable: String? = runningExecutable()) -> String {
        guard let executable, let slash = executable.lastIndex(of: "/") else { return "docs/" + file }
        let bin = executable[..<slash]
        guard let parent = bin.lastIndex(of: "/") else { return "docs/" + file }
        let installed = String(bin[..<parent]) + "/share/doc/beacond"
        var info = stat()
        guard stat(installed, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return "docs/" + file }
        return installed + "/" + file
    }

    /// This process's executable, from /proc/self/exe (symbolic links resolved).
    package static func runningExecutable() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

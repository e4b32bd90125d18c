import Foundation

/// The reference decoder: tshark printing each report's address and RSSI.
enum TShark {
    struct Result {
        var version: String
        var seconds: Double
        /// Output lines: one per frame, that is one per report in the benchmark capture.
        var lines: Int
        /// Lines with an address, i.e. frames tshark dissected as advertising reports.
        var linesWithAddress: Int
    }

    static func locate() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in path.split(separator: ":") where !folder.isEmpty {
            let candidate = String(folder) + "/tshark"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    static func version(_ tshark: String) -> String {
        guard let output = try? run(tshark, ["--version"]).stdout,
            let first = String(decoding: output, as: UTF8.self).split(separator: "\n").first
        else { return "tshark" }
        // "TShark (Wireshark) 4.0.17 (Git v4.0.17 packaged as ...)"
        let words = first.split(separator: " ")
        if words.count >= 3 { return "tshark \(words[2])" }
        return String(first)
    }

    /// Runs tshark over `file` with its output to /dev/null, timing the whole process (start-up
    /// included); then runs it again into a pipe to count its output lines.
    static func measure(_ tshark: String, file: String) throws -> Result {
        let arguments = ["-r", file, "-T", "fields", "-e", "bthci_evt.bd_addr", "-e", "bthci_evt.rssi"]
        let started = monotonicSeconds()
        let timed = try run(tshark, arguments, discardOutput: true)
        let seconds = monotonicSeconds() - started
        guard timed.status == 0 else {
            throw BenchError(
                "tshark exited with status \(timed.status): "
                    + String(decoding: timed.stderr.suffix(500), as: UTF8.self))
        }
        let output = try run(tshark, arguments)
        guard output.status == 0 else {
            throw BenchError(
                "tshark exited with status \(output.status): "
                    + String(decoding: output.stderr.suffix(500), as: UTF8.self))
        }
        var lines = 0
        var withAddress = 0
        var lineStart = true
        for byte in output.stdout {
            if lineStart && byte != UInt8(ascii: "\t") && byte != UInt8(ascii: "\n") { withAddress += 1 }
            lineStart = byte == UInt8(ascii: "\n")
            if lineStart { lines += 1 }
        }
        return Result(version: version(tshark), seconds: seconds, lines: lines, linesWithAddress: withAddress)
    }

    /// Runs a program to completion, collecting its output through pipes read on their own threads.
    /// With `discardOutput`, standard output goes to /dev/null (and comes back empty).
    static func run(_ program: String, _ arguments: [String], discardOutput: Bool = false) throws
        -> (status: Int32, stdout: Data, stderr: Data)
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput =
            discardOutput ? (FileHandle(forWritingAtPath: "/dev/null") ?? FileHandle.nullDevice) : out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let collected = Collected()
        let group = DispatchGroup()
        var handles = [(err.fileHandleForReading, false)]
        if !discardOutput { handles.append((out.fileHandleForReading, true)) }
        for (handle, isOut) in handles {
            DispatchQueue.global().async(group: group) {
                let data = handle.readDataToEndOfFile()
                collected.set(data, isOut: isOut)
            }
        }
        process.waitUntilExit()
        group.wait()
        return (process.terminationStatus, collected.stdout, collected.stderr)
    }

    private final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var out = Data(), err = Data()
        func set(_ data: Data, isOut: Bool) {
            lock.lock()
            if isOut { out = data } else { err = data }
            lock.unlock()
        }
        var stdout: Data { lock.lock(); defer { lock.unlock() }; return out }
        var stderr: Data { lock.lock(); defer { lock.unlock() }; return err }
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

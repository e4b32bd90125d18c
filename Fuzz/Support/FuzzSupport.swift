// Shared by every fuzz target (compiled into each one; see Fuzz/run.sh): typed values drawn from
// the fuzzer's bytes, a property check that aborts (libFuzzer then saves the input), and the
// seed writer behind `FUZZ_WRITE_SEEDS`.
import BLEPayload
import Glibc

/// Draws typed values from the fuzzer's bytes, front to back; past the end every value is zero,
/// so any input, even an empty one, is a valid run.
struct FuzzInput {
    let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(_ data: UnsafePointer<UInt8>?, _ size: Int) {
        bytes = UnsafeRawBufferPointer(start: size > 0 ? data : nil, count: size)
    }

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    var isAtEnd: Bool { offset >= bytes.count }
    var remaining: Int { max(0, bytes.count - offset) }

    mutating func u8() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func bool() -> Bool { u8() & 1 == 1 }

    mutating func u16() -> UInt16 { UInt16(u8()) << 8 | UInt16(u8()) }

    mutating func u32() -> UInt32 { UInt32(u16()) << 16 | UInt32(u16()) }

    mutating func u64() -> UInt64 { UInt64(u32()) << 32 | UInt64(u32()) }

    mutating func i64() -> Int64 { Int64(bitPattern: u64()) }

    /// A value in `0..<bound` (bound > 0).
    mutating func below(_ bound: Int) -> Int { Int(u16()) % bound }

    /// Up to `count` bytes (fewer at the end of the input).
    mutating func take(_ count: Int) -> [UInt8] {
        let available = min(max(0, count), remaining)
        defer { offset += available }
        return Array(bytes[offset..<offset + available])
    }

    /// Everything not drawn yet.
    mutating func rest() -> [UInt8] { take(remaining) }
}

/// A property of the target does not hold: print it and abort, so libFuzzer saves the input.
func fuzzCheck(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
    file: StaticString = #fileID, line: UInt = #line
) {
    guard !condition() else { return }
    fputs("fuzz property failed at \(file):\(line): \(message())\n", stderr)
    abort()
}

/// One record of a capture in `FUZZ_CAPTURES`, owned.
struct CapturedRecord {
    var file: String
    var linkType: LinkType
    var flags: UInt32
    var timestamp: Int64
    var bytes: [UInt8]
}

/// What a target's seeds may be built from: the captures' raw bytes, their records, and the
/// advertising reports the project's own extractor finds in them.
struct SeedSources {
    var captureFiles: [(name: String, bytes: [UInt8])] = []
    var records: [CapturedRecord] = []
    var allReports: [OwnedAdvertisingReport] = []

    func reports(limit: Int) -> [OwnedAdvertisingReport] { Array(allReports.prefix(limit)) }
}

private func readWholeFile(_ path: String) -> [UInt8]? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
        if count <= 0 { break }
        bytes += chunk[0..<count]
    }
    return bytes
}

/// The captures in `directory` (not its subfolders); files CaptureReader refuses are skipped.
private func loadCaptures(_ directory: String) -> SeedSources {
    var sources = SeedSources()
    guard let dir = opendir(directory) else { return sources }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        // Read in place: copying d_name (256 bytes) can read past a short record's end.
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19
        let name = String(cString: (UnsafeRawPointer(entry) + offset).assumingMemoryBound(to: CChar.self))
        if entry.pointee.d_type == UInt8(DT_REG) { names.append(name) }
    }
    for name in names.sorted() {
        let path = directory + "/" + name
        guard let bytes = readWholeFile(path), let reader = try? CaptureReader(bytes: bytes, name: name) else {
            continue
        }
        sources.captureFiles.append((name, bytes))
        var extractor = AdvertisingExtractor()
        while let packet = try? reader.next() {
            extractor.process(packet) { sources.allReports.append($0.owned()) }
            sources.records.append(
                CapturedRecord(
                    file: name, linkType: packet.linkType, flags: packet.flags, timestamp: packet.timestamp,
                    bytes: Array(packet.bytes)))
        }
    }
    return sources
}

/// With `FUZZ_WRITE_SEEDS=dir` (and optionally `FUZZ_CAPTURES=dir`), writes the target's seeds
/// (`fuzzSeeds`, defined by each target) to `dir` and exits; otherwise libFuzzer runs as usual.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> Int32 {
    guard let target = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    let sources = getenv("FUZZ_CAPTURES").map { loadCaptures(String(cString: $0)) } ?? SeedSources()
    var written = 0
    var seen = Set<[UInt8]>()
    for seed in fuzzSeeds(sources) where seen.insert(seed).inserted {
        let path = "\(target)/seed-\(written)"
        guard let file = fopen(path, "wb") else {
            fputs("cannot write \(path)\n", stderr)
            exit(1)
        }
        _ = seed.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
        written += 1
    }
    print("seeds: \(written) written to \(target)")
    exit(0)
}

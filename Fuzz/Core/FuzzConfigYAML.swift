// Target `config-yaml`: the config file (DaemonConfiguration.parse: YAMLBounds, Yams, the key
// walker and its checks), compiled with all of BeacondCore (not `@main`) over the debug build's
// dependencies (Fuzz/run.sh). Any text either gives a configuration or a ConfigurationError whose
// every problem names the file and whose exit code is 78; parsing is deterministic; and the file
// read from disk gives the same result as its text.
import Glibc

private let scratchPath: String = {
    let directory = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
    return "\(directory)/beacond-fuzz-\(getpid()).yaml"
}()

private var scratchRegistered = false

private func parse(_ text: String) -> Result<DaemonConfiguration, ConfigurationError> {
    Result { () throws(ConfigurationError) in
        try DaemonConfiguration.parse(yaml: text, file: scratchPath, relativeTo: "/")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfigYAML(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput(data, size)
    let text = String(decoding: input.bytes, as: UTF8.self)
    let first = parse(text)
    if case .failure(let error) = first {
        fuzzCheck(error.exitCode == 78, "exit code \(error.exitCode) for \(error)")
        fuzzCheck(!error.problems.isEmpty, "an error without problems")
        for problem in error.problems {
            fuzzCheck(problem.file == scratchPath, "a problem naming \(String(describing: problem.file))")
            fuzzCheck(!problem.description.isEmpty, "a problem without a description")
        }
    }
    fuzzCheck(parse(text) == first, "two parses of the same text differ")

    guard Array(text.utf8).elementsEqual(input.bytes) else { return 0 } // the file reader refuses bad UTF-8
    if !scratchRegistered {
        scratchRegistered = true
        atexit { unlink(scratchPath) }
    }
    guard let file = fopen(scratchPath, "wb") else { return 0 }
    if input.bytes.count > 0 { fwrite(input.bytes.baseAddress, 1, input.bytes.count, file) }
    fclose(file)
    let fromFile = Result { () throws(ConfigurationError) in try DaemonConfiguration.parse(path: scratchPath) }
    fuzzCheck(fromFile == first, "the file and its text give different results")
    return 0
}

func fuzzSeeds(_ sources: SeedSources) -> [[UInt8]] {
    var seeds: [[UInt8]] = [
        Array("fusion:\n  policy: safety\n  min_rssi_dbm: -80\n  zones: [1, 2]\n".utf8),
        Array("scanner:\n  backend: hci\n  adapter: hci0\nremote:\n  url: https://example.org/api/state\n".utf8),
        Array("a: &a [1]\nb: *a\n".utf8), Array("fusion: {policy: most-severe, policy: safety}\n".utf8),
        Array("- 1\n- 2\n".utf8), Array("fusion:\n  max_ttl: 1e400s\n  stale_after: -3s\n".utf8), [0xFF, 0xFE, 0x3A],
    ]
    if let file = fopen("systemd/beacond.yaml", "rb") {
        var bytes: [UInt8] = []
        var byte = fgetc(file)
        while byte != EOF {
            bytes.append(UInt8(byte))
            byte = fgetc(file)
        }
        fclose(file)
        seeds.append(bytes)
    }
    return seeds
}

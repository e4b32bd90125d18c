import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The config file's digest (`status.config.sha256`): FIPS 180-4's vectors, and `sha256sum` on
/// every length around the padding's block boundaries.
@Suite struct SHA256Tests {
    @Test func knownVectors() {
        #expect(
            SHA256Digest(of: [UInt8]()).hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            SHA256Digest(of: Array("abc".utf8)).hex
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // 56 bytes: the length no longer fits the first block, so the padding takes a second.
        #expect(
            SHA256Digest(of: Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)).hex
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func oneMillionAs() {
        let million = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256Digest(of: million).hex == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        #expect(SHA256Digest(of: million).bytes.count == 32)
    }

    /// Lengths 0...130 (every padding case of the first three blocks) and 1 MiB, against coreutils.
    @Test func agreesWithSha256sum() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/sha256sum") else {
            print("SHA256Tests: /usr/bin/sha256sum is missing; the differential check is skipped")
            return
        }
        var generator = SystemRandomNumberGenerator()
        let lengths = Array(0...130) + [1 << 20]
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sha256-\(getpid()).bin")
        defer { try? FileManager.default.removeItem(at: file) }
        for length in lengths {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            try Data(bytes).write(to: file)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
            process.arguments = [file.path]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let expected = String(decoding: output, as: UTF8.self).prefix(64)
            #expect(SHA256Digest(of: bytes).hex == expected, "length \(length)")
        }
    }
}

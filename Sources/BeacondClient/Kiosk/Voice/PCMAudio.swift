import Glibc

/// Mono 16-bit PCM, as espeak-ng writes it (`-w`, 22,050 Hz) and aplay plays it: the kiosk's
/// announcements are the alarm and each language's words joined into one WAV file, so one child
/// process plays a whole announcement and killing it cuts the announcement off.
package struct PCMAudio: Hashable, Sendable {
    package var sampleRate: Int
    package var samples: [Int16]

    package init(sampleRate: Int, samples: [Int16] = []) {
        self.sampleRate = sampleRate
        self.samples = samples
    }

    /// Why a WAV file is not one the kiosk reads.
    package enum FormatError: Error, Equatable, CustomStringConvertible {
        case notWAV
        case unsupported(String)
        case truncated(offset: Int)

        package var description: String {
            switch self {
            case .notWAV: "not a RIFF/WAVE file"
            case .unsupported(let what): "unsupported WAV: \(what) (mono 16-bit PCM only)"
            case .truncated(let offset): "truncated WAV at byte offset \(offset)"
            }
        }
    }

    /// Reads a RIFF/WAVE file of mono 16-bit PCM: the `fmt ` chunk, then the `data` chunk (other
    /// chunks are skipped; a data chunk that runs past the end of the bytes, as a streamed WAV's
    /// does, is read to the end).
    package init(wav bytes: [UInt8]) throws(FormatError) {
        func u32(_ at: Int) -> Int {
            Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
        }
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        guard bytes.count >= 12, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WAVE".utf8)
        else { throw .notWAV }
        var offset = 12
        var rate: Int?
        while offset + 8 <= bytes.count {
            let size = u32(offset + 4)
            let body = offset + 8
            if bytes[offset..<offset + 4].elementsEqual("fmt ".utf8) {
                guard size >= 16, body + 16 <= bytes.count else { throw .truncated(offset: body) }
                guard u16(body) == 1 else { throw .unsupported("format \(u16(body))") }
                guard u16(body + 2) == 1 else { throw .unsupported("\(u16(body + 2)) channels") }
                guard u16(body + 14) == 16 else { throw .unsupported("\(u16(body + 14)) bits per sample") }
                rate = u32(body + 4)
            } else if bytes[offset..<offset + 4].elementsEqual("data".utf8) {
                guard let rate, rate > 0 else { throw .unsupported("no fmt chunk before the data") }
                let end = min(bytes.count, body + size)
                var samples: [Int16] = []
                samples.reserveCapacity(max(0, end - body) / 2)
                var at = body
                while at + 1 < end {
                    samples.append(Int16(bitPattern: UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8))
                    at += 2
                }
                self.init(sampleRate: rate, samples: samples)
                return
            }
            guard size <= bytes.count - body else { throw .truncated(offset: body) }
            offset = body + size + (size & 1)
        }
        throw .truncated(offset: bytes.count)
    }

    /// The samples as a RIFF/WAVE file.
    package func wav() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(44 + 2 * samples.count)
        func append(_ text: String) { bytes.append(contentsOf: text.utf8) }
        func append32(_ value: Int) {
            for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
        }
        func append16(_ value: Int) {
            bytes.append(UInt8(truncatingIfNeeded: value)); bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        }
        append("RIFF")
        append32(36 + 2 * samples.count)
        append("WAVEfmt ")
        append32(16)
        append16(1) // PCM
        append16(1) // mono
        append32(sampleRate)
        append32(sampleRate * 2)
        append16(2)
        append16(16)
        append("data")
        append32(2 * samples.count)
        for sample in samples { append16(Int(UInt16(bitPattern: sample))) }
        return bytes
    }

    /// Seconds of sound.
    package var duration: Double { sampleRate > 0 ? Double(samples.count) / Double(sampleRate) : 0 }

    /// `milliseconds` of silence at `sampleRate`.
    package static func silence(milliseconds: Int, sampleRate: Int) -> PCMAudio {
        PCMAudio(sampleRate: sampleRate, samples: Array(repeating: 0, count: max(0, sampleRate * milliseconds / 1000)))
    }

    /// The evacuation alarm: two tones in turn, high then low, `cycles` times, each tone
    /// `toneMilliseconds` long with 10 ms ramps (no clicks), at half of full scale.
    package static func alarm(
        sampleRate: Int, high: Double = 960, low: Double = 770, toneMilliseconds: Int = 400, cycles: Int = 3
    ) -> PCMAudio {
        let perTone = sampleRate * toneMilliseconds / 1000
        let ramp = max(1, sampleRate / 100)
        var samples: [Int16] = []
        samples.reserveCapacity(2 * cycles * perTone)
        for _ in 0..<cycles {
            for frequency in [high, low] {
                for index in 0..<perTone {
                    let envelope = Double(min(index, perTone - 1 - index, ramp)) / Double(ramp)
                    let phase = 2 * Double.pi * frequency * Double(index) / Double(sampleRate)
                    samples.append(Int16((16_000 * envelope * sin(phase)).rounded()))
                }
            }
        }
        return PCMAudio(sampleRate: sampleRate, samples: samples)
    }

    /// `other` appended, resampled to this rate when it differs (nearest sample: alarms and
    /// speech at one rate need none).
    package mutating func append(_ other: PCMAudio) {
        guard other.sampleRate != sampleRate, other.sampleRate > 0 else {
            samples += other.samples
            return
        }
        let count = other.samples.count * sampleRate / other.sampleRate
        samples.reserveCapacity(samples.count + count)
        for index in 0..<count {
            samples.append(other.samples[min(other.samples.count - 1, index * other.sampleRate / sampleRate)])
        }
    }
}

// Target `capture-pcap`: CaptureReader on classic pcap files (either byte order, µs or ns; the
// input's first 4 bytes forced to a pcap magic when they are none), from memory and from a file,
// with the same properties as `capture-btsnoop`.
import BLEPayload

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCapturePcap(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let magics: [[UInt8]] = [
        [0xD4, 0xC3, 0xB2, 0xA1], [0xA1, 0xB2, 0xC3, 0xD4], [0x4D, 0x3C, 0xB2, 0xA1], [0xA1, 0xB2, 0x3C, 0x4D],
    ]
    checkCapture(forcingMagic(FuzzInput(data, size).bytes, magics[0], accepted: magics))
    return 0
}

func fuzzSeeds(_ sources: SeedSources) -> [[UInt8]] {
    var seeds: [[UInt8]] = []
    let advertising = GeoRacingSignal.circuit(zone: 5, mode: .safetyCar, sequence: 77).advertisingData()
    let report = OwnedAdvertisingReport(
        address: BluetoothAddress(rawValue: 0x1122_3344_5566), rssi: -70, data: advertising)
    guard let event = try? HCIEventEncoder.advertisingReport([report]) else { return seeds }
    for (linkType, packet) in [
        (UInt32(187), HCIEventEncoder.h4(event)), (201, [0, 0, 0, 1] + HCIEventEncoder.h4(event)),
        (254, [0, 0, 0, 3] + event),
    ] {
        for (nanoseconds, bigEndian) in [(false, false), (true, true)] {
            var bytes = PcapWriter.fileHeader(linkType: linkType, nanoseconds: nanoseconds, bigEndian: bigEndian)
            PcapWriter.appendRecord(
                to: &bytes, timestamp: 1_700_000_000_123_456, packet: packet, nanoseconds: nanoseconds,
                bigEndian: bigEndian)
            seeds.append(bytes)
        }
    }
    for file in sources.captureFiles where file.name.hasSuffix(".pcap") {
        seeds.append(Array(file.bytes.prefix(65_536)))
    }
    return seeds
}

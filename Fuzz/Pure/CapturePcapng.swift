// Target `capture-pcapng`: CaptureReader on pcapng files (sections, interfaces with if_tsresol,
// enhanced, simple, obsolete and unknown blocks; the input's first 4 bytes forced to a section
// header's type), from memory and from a file, with the same properties as `capture-btsnoop`.
import BLEPayload

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCapturePcapng(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let magic: [UInt8] = [0x0A, 0x0D, 0x0D, 0x0A]
    checkCapture(forcingMagic(FuzzInput(data, size).bytes, magic, accepted: [magic]))
    return 0
}

func fuzzSeeds(_ sources: SeedSources) -> [[UInt8]] {
    var seeds: [[UInt8]] = []
    let advertising = GeoRacingSignal.circuit(zone: 5, mode: .evacuation, sequence: 77).advertisingData()
    let report = OwnedAdvertisingReport(
        address: BluetoothAddress(rawValue: 0x1122_3344_5566), rssi: -70, data: advertising)
    guard let event = try? HCIEventEncoder.advertisingReport([report]) else { return seeds }
    for tsresol: UInt8? in [nil, 9, 0x80 | 20, 127] {
        var bytes = PcapngWriter.sectionHeader() + PcapngWriter.interfaceDescription(linkType: 187, tsresol: tsresol)
        bytes += PcapngWriter.enhancedPacket(ticks: 1_700_000_000_000_000, packet: HCIEventEncoder.h4(event))
        bytes += PcapngWriter.interfaceDescription(linkType: 201)
        bytes += PcapngWriter.enhancedPacket(interface: 1, ticks: 5, packet: [0, 0, 0, 1] + HCIEventEncoder.h4(event))
        seeds.append(bytes)
    }
    for file in sources.captureFiles where file.name.hasSuffix(".pcapng") {
        seeds.append(Array(file.bytes.prefix(65_536)))
    }
    return seeds
}

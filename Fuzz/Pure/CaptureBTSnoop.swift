// Target `capture-btsnoop`: CaptureReader on btsnoop files (the input, its first 8 bytes forced to
// "btsnoop\0"), from memory and from a file: no crash, bounded records and buffer, and the two
// paths agree record for record and error for error. Every record also goes through the
// advertising extractor and the GeoRacing decoder.
import BLEPayload

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCaptureBTSnoop(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let magic = Array("btsnoop\0".utf8)
    checkCapture(forcingMagic(FuzzInput(data, size).bytes, magic, accepted: [magic]))
    return 0
}

func fuzzSeeds(_ sources: SeedSources) -> [[UInt8]] {
    var seeds: [[UInt8]] = []
    let events = [
        GeoRacingSignal.circuit(zone: 1, mode: .redFlag, sequence: 1).advertisingData(),
        GeoRacingSignal.staff(sourceID: 9, zone: 2, mode: .evacuation, sequence: 2, ttl: 9).advertisingData(),
    ].compactMap { data in
        try? HCIEventEncoder.advertisingReport([
            OwnedAdvertisingReport(address: BluetoothAddress(rawValue: 0xA1B2_C3D4_E5F6), rssi: -50, data: data)
        ])
    }
    for datalink: UInt32 in [1001, 1002, 2001] {
        var bytes = BTSnoopWriter.fileHeader(datalink: datalink)
        for (index, event) in events.enumerated() {
            let packet = datalink == 1002 ? HCIEventEncoder.h4(event) : event
            let flags: UInt32 = datalink == 2001 ? 3 : BTSnoopWriter.receivedEventFlags
            BTSnoopWriter.appendRecord(
                to: &bytes, timestamp: 1_700_000_000_000_000 + Int64(index), flags: flags, packet: packet)
        }
        seeds.append(bytes)
    }
    for file in sources.captureFiles where file.bytes.starts(with: Array("btsnoop".utf8)) {
        seeds.append(Array(file.bytes.prefix(65_536)))
    }
    return seeds
}

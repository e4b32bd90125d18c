// Target `ad-structures`: advertising data (AD structures) of any bytes. Every structure lies
// inside the data, in order and without overlap; a malformed offset is where parsing stopped;
// the accessors agree with the structures; and rebuilding the structures with
// AdvertisingDataBuilder gives back the bytes they were parsed from.
import BLEPayload

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAdvertisingStructures(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput(data, size)
    let bytes = input.bytes
    let advertising = AdvertisingData(bytes)
    var iterator = advertising.makeIterator()
    var builder = AdvertisingDataBuilder()
    var next = 0
    var structures = 0
    var manufacturer = 0
    while let structure = iterator.next() {
        structures += 1
        fuzzCheck(structure.offset == next, "structure at \(structure.offset), expected at \(next)")
        fuzzCheck(Int(bytes[structure.offset]) == structure.data.count + 1, "length byte disagrees with the data")
        fuzzCheck(structure.type == bytes[structure.offset + 1], "type byte disagrees")
        next = structure.offset + 2 + structure.data.count
        fuzzCheck(next <= bytes.count, "structure at \(structure.offset) ends past the data")
        builder.append(type: structure.type, data: structure.data)
        if structure.type == ADType.manufacturerSpecificData && structure.data.count >= 2 { manufacturer += 1 }
    }
    fuzzCheck(builder.bytes == Array(bytes[0..<next]), "rebuilt structures differ from the bytes they came from")
    if let malformed = iterator.malformedOffset {
        fuzzCheck(malformed == next, "malformed at \(malformed), parsing stopped at \(next)")
        fuzzCheck(Int(bytes[malformed]) > bytes.count - malformed - 1, "malformed structure fits")
    } else if next < bytes.count {
        fuzzCheck(bytes[next] == 0, "parsing stopped at \(next) without a zero length or an error")
    }
    fuzzCheck(advertising.malformedOffset == iterator.malformedOffset, "malformedOffset differs between passes")
    fuzzCheck(advertising.reduce(0) { count, _ in count + 1 } == structures, "a second pass differs")
    fuzzCheck(advertising.manufacturerData.reduce(0) { count, _ in count + 1 } == manufacturer, "manufacturer data")

    if let flags = advertising.flags { fuzzCheck(advertising.first(ADType.flags)?.data.first == flags, "flags") }
    _ = advertising.txPowerLevel
    if let name = advertising.localName { fuzzCheck(name.count <= 254, "local name of \(name.count) bytes") }
    _ = advertising.serviceUUIDs16
    for (_, serviceData) in advertising.serviceData16 { fuzzCheck(serviceData.count <= 252, "service data") }
    for companyID: UInt16 in [GeoRacingSignal.defaultCompanyID, 0xFFFF] {
        if case .signal(let signal) = GeoRacingDecoder(companyID: companyID).decode(advertising) {
            fuzzCheck(signal.version != .v2 || signal.sourceID != nil, "v2 signal without a source id")
        }
    }
    return 0
}

func fuzzSeeds(_ sources: SeedSources) -> [[UInt8]] {
    var builder = AdvertisingDataBuilder()
    builder.appendFlags(0x06)
    builder.appendTXPowerLevel(-4)
    builder.appendLocalName("GeoRacing T1")
    builder.append(type: ADType.completeServiceUUIDs16, data: [0x0F, 0x18, 0x0A, 0x18])
    builder.append(type: ADType.serviceData16, data: [0xAA, 0xFE, 1, 2, 3])
    var seeds: [[UInt8]] = [
        builder.bytes,
        GeoRacingSignal.circuit(zone: 4, mode: .safetyCar, sequence: 9).advertisingData(),
        GeoRacingSignal.staff(sourceID: 1, zone: 4, mode: .evacuation, sequence: 9, ttl: 60).advertisingData(),
        [2, 1, 6, 0, 0, 0], [3, 0xFF], [1, 0xFF, 5, 0xFF, 0x34, 0x12, 1],
    ]
    for report in sources.reports(limit: 5_000) where !report.data.isEmpty { seeds.append(report.data) }
    return Array(seeds.prefix(400))
}

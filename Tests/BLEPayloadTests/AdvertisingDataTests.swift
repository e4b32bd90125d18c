import BLEPayload
import Testing

@Suite struct AdvertisingDataTests {
    private func withData<R>(_ bytes: [UInt8], _ body: (AdvertisingData) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes { try body(AdvertisingData($0)) }
    }

    @Test func walksStructuresAndExposesFields() {
        var builder = AdvertisingDataBuilder()
        builder.appendFlags(0x1A)
        builder.appendLocalName("Pit Lane 3")
        builder.appendTXPowerLevel(-12)
        builder.append(type: ADType.completeServiceUUIDs16, data: [0x0F, 0x18, 0xFE, 0xFE])
        builder.append(type: ADType.serviceData16, data: [0xAA, 0xFE, 0x10, 0x20])
        builder.appendManufacturerData(companyID: 0x004C, payload: [0x02, 0x15, 0x01])
        withData(builder.bytes) { data in
            #expect(data.map(\.type) == [0x01, 0x09, 0x0A, 0x03, 0x16, 0xFF])
            #expect(data.flags == 0x1A)
            #expect(data.localName.map { String(decoding: $0, as: UTF8.self) } == "Pit Lane 3")
            #expect(data.txPowerLevel == -12)
            #expect(data.serviceUUIDs16 == [0x180F, 0xFEFE])
            #expect(data.serviceData16.map(\.uuid) == [0xFEAA])
            #expect(data.serviceData16.first.map { Array($0.data) } == [0x10, 0x20])
            let mfr = Array(data.manufacturerData)
            #expect(mfr.count == 1)
            #expect(mfr.first?.companyID == 0x004C)
            #expect(mfr.first.map { Array($0.payload) } == [0x02, 0x15, 0x01])
            #expect(data.malformedOffset == nil)
        }
    }

    @Test func inPlaceEncodingMatchesTheBuilderAndDecodesBack() {
        var builder = AdvertisingDataBuilder()
        builder.appendManufacturerData(companyID: 0x1234, payload: [1, 2, 3])
        builder.appendTXPowerLevel(-7)
        // A reused buffer, emptied but keeping its capacity, as a backend rebuilds one per report.
        var reused: [UInt8] = [9, 9, 9, 9]
        reused.removeAll(keepingCapacity: true)
        AdvertisingDataBuilder.appendManufacturerData(companyID: 0x1234, payload: [1, 2, 3], to: &reused)
        AdvertisingDataBuilder.appendTXPowerLevel(-7, to: &reused)
        #expect(reused == builder.bytes)
        #expect(reused == [6, 0xFF, 0x34, 0x12, 1, 2, 3, 2, 0x0A, 0xF9])
        reused.withUnsafeBytes { raw in
            let data = AdvertisingData(raw)
            #expect(data.txPowerLevel == -7)
            #expect(data.manufacturerData.map { Array($0.payload) } == [[1, 2, 3]])
        }
    }

    @Test func shortenedNameIsUsedWhenNoCompleteName() {
        var builder = AdvertisingDataBuilder()
        builder.appendLocalName("Pit", complete: false)
        withData(builder.bytes) { #expect($0.localName.map { Array($0) } == Array("Pit".utf8)) }
    }

    @Test func zeroLengthEndsTheList() {
        let bytes: [UInt8] = [0x02, 0x01, 0x06, 0x00, 0x05, 0xFF, 0x01]
        withData(bytes) { data in
            #expect(data.map(\.type) == [0x01])
            #expect(data.malformedOffset == nil)
        }
    }

    @Test func overrunningStructureMarksDataMalformedAtItsOffset() {
        let bytes: [UInt8] = [0x02, 0x01, 0x06, 0x09, 0xFF, 0x34, 0x12]
        withData(bytes) { data in
            #expect(data.map(\.type) == [0x01])
            #expect(data.malformedOffset == 3)
            #expect(Array(data.manufacturerData).isEmpty)
        }
    }

    @Test func manufacturerDataShorterThanCompanyIDIsSkipped() {
        let bytes: [UInt8] = [0x02, 0xFF, 0x34, 0x04, 0xFF, 0x34, 0x12, 0x01]
        withData(bytes) { data in
            let entries = Array(data.manufacturerData)
            #expect(entries.count == 1)
            #expect(entries.first?.companyID == 0x1234)
        }
    }

    @Test func emptyDataHasNothing() {
        withData([]) { data in
            #expect(data.flags == nil)
            #expect(data.txPowerLevel == nil)
            #expect(data.localName == nil)
            #expect(data.malformedOffset == nil)
        }
    }

    @Test func everyPrefixOfValidDataIsSafe() {
        var builder = AdvertisingDataBuilder()
        builder.appendFlags(0x06)
        builder.appendManufacturerData(
            companyID: 0x1234, payload: GeoRacingSignal.circuit(zone: 1, mode: .redFlag, sequence: 1).encoded())
        builder.appendLocalName("beacon")
        for length in 0...builder.bytes.count {
            withData(Array(builder.bytes.prefix(length))) { data in
                let structures = data.map { $0 }
                let consumed = structures.reduce(0) { $0 + 2 + $1.data.count }
                if data.malformedOffset == nil {
                    #expect(consumed == length)
                } else {
                    #expect(consumed < length)
                }
            }
        }
    }
}

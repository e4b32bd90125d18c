import BLEPayload
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The one decode-and-batch path of the live sink and replay.
@Suite struct ScannedSignalBatcherTests {
    typealias Sink = AdvertisementSinkTests

    @Test func decodesSignalsCountsRejectsAndIgnoresTheRest() {
        var batcher = ScannedSignalBatcher(decoder: GeoRacingDecoder())
        #expect(batcher.isEmpty)
        Sink.withReport(Sink.frame(Sink.redFlag), rssi: -71) { batcher.add($0, at: 42) }
        var other = AdvertisingDataBuilder()
        other.appendLocalName("headphones")
        Sink.withReport(other.bytes) { batcher.add($0, at: 43) }
        #expect(!batcher.isEmpty)
        var bad = AdvertisingDataBuilder()
        bad.appendManufacturerData(companyID: GeoRacingSignal.defaultCompanyID, payload: [1, 2, 3])
        Sink.withReport(bad.bytes) { batcher.add($0, at: 44) }

        let batch = batcher.take()
        #expect(batch.signals.count == 1)
        #expect(batch.signals.first?.signal == Sink.redFlag)
        #expect(batch.signals.first?.address == Sink.address)
        #expect(batch.signals.first?.rssi == -71)
        #expect(batch.signals.first?.time == 42)
        #expect(batch.rejectedFrames == 1)
        // Taking leaves an empty batch behind.
        #expect(batcher.isEmpty)
        #expect(batcher.take().isEmpty)
    }

    @Test func aRejectedFrameAloneStillMakesABatch() {
        var batcher = ScannedSignalBatcher(decoder: GeoRacingDecoder())
        var bad = AdvertisingDataBuilder()
        bad.appendManufacturerData(companyID: GeoRacingSignal.defaultCompanyID, payload: [9])
        Sink.withReport(bad.bytes) { batcher.add($0, at: 1) }
        #expect(!batcher.isEmpty)
        #expect(!batcher.isFull)
        #expect(batcher.take().rejectedFrames == 1)
    }

    @Test func isFullAtTheLimit() {
        var batcher = ScannedSignalBatcher(decoder: GeoRacingDecoder())
        for index in 0..<ScannedSignalBatcher.limit {
            #expect(!batcher.isFull)
            let signal = GeoRacingSignal.circuit(zone: 1, mode: .normal, sequence: UInt16(index), ttl: 10)
            Sink.withReport(Sink.frame(signal)) { batcher.add($0, at: Int64(index)) }
        }
        #expect(batcher.isFull)
        let batch = batcher.take()
        #expect(batch.signals.map(\.time) == (0..<Int64(ScannedSignalBatcher.limit)).map { $0 })
        #expect(!batcher.isFull)
    }
}

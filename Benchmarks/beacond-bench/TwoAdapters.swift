// The two-adapter figure (issue 32): every report of the venue workload heard by two adapters,
// the second copy 50 µs later and 2 dB weaker; AdapterCopyFilter drops it and the engine ingests
// what passes. Compared, in the same run, with one adapter's ingest of each report once.
import BLEPayload
import CircuitState

/// Each input's GeoRacing payload, encoded before timing, laid out end to end.
struct EncodedPayloads {
    var bytes: [UInt8] = []
    var ranges: [Range<Int>] = []

    init(_ inputs: [EngineInput]) {
        for input in inputs {
            let encoded = input.signal.encoded()
            ranges.append(bytes.count..<(bytes.count + encoded.count))
            bytes += encoded
        }
    }
}

/// Filter, then ingest what passes, for both adapters' copies of every input.
@inline(never)
func filterAndIngestTwoCopies(
    _ inputs: [EngineInput], payloads: EncodedPayloads, configuration: FusionConfiguration
) -> EngineTally {
    var engine = FusionEngine(configuration: configuration)
    var filter = AdapterCopyFilter()
    var tally = EngineTally()
    payloads.bytes.withUnsafeBytes { all in
        inputs.withUnsafeBufferPointer { buffer in
            for (index, input) in buffer.enumerated() {
                let payload = UnsafeRawBufferPointer(rebasing: all[payloads.ranges[index]])
                for adapter: UInt16 in 0...1 {
                    let rssi = input.rssi &- Int8(adapter * 2)
                    let time = input.time + Int64(adapter) * 50
                    guard
                        filter.admit(
                            address: input.address.rawValue, payload: payload, adapter: adapter, rssi: rssi, now: time)
                    else { continue }
                    let outcome = engine.ingest(input.signal, address: input.address, rssi: rssi, at: time)
                    tally.checksum = tally.checksum &* 31 &+ fold(outcome)
                }
            }
        }
    }
    tally.changes = Int(filter.counters.dropped)
    tally.finalMode = engine.evaluate(at: engine.clock).decision.mode
    tally.finalOverrides = engine.overrideCount
    return tally
}

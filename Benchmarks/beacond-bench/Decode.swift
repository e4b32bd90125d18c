import BLEPayload

/// What one pass over the capture found: enough to keep every decoded value alive
/// and to check that all passes agree.
struct DecodeTally: Equatable {
    var records = 0
    var reports = 0
    var rssiSum = 0
    var signals = 0
    var rejected = 0
    /// Sum over signals of zone, mode, sequence and TTL.
    var signalSum = 0
    var problems = 0

    var checksum: Int { rssiSum &* 31 &+ signalSum &* 7 &+ reports &+ signals &* 3 &+ rejected }
}

/// beacond's decode path: records from the reader, reports from the extractor,
/// GeoRacing frames from the decoder. Nothing is printed or allocated per report.
@inline(never)
func decodeAll(_ reader: CaptureReader) throws(CaptureError) -> DecodeTally {
    var tally = DecodeTally()
    var extractor = AdvertisingExtractor()
    let geoRacing = GeoRacingDecoder()
    while let packet = try reader.next() {
        tally.records += 1
        let problem = extractor.process(packet) { report in
            tally.reports += 1
            tally.rssiSum &+= Int(report.rssi ?? 0)
            switch geoRacing.decode(report.data) {
            case .none:
                break
            case .signal(let signal):
                tally.signals += 1
                tally.signalSum &+=
                    Int(signal.zone) &+ Int(signal.mode.rawValue) &+ Int(signal.sequence)
                    &+ Int(signal.ttl)
            case .rejected, .userBeacon:
                tally.rejected += 1
            }
        }
        if problem != nil { tally.problems += 1 }
    }
    return tally
}

struct Measurement {
    var seconds: [Double]
    var tally: DecodeTally

    var best: Double { seconds.min() ?? .nan }
    var median: Double {
        let sorted = seconds.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}

/// Times `runs` passes (after one untimed warm-up), each with a fresh reader from `open`.
/// Opening the reader is inside the timed region: for a file it is part of the cost.
func measure(runs: Int, _ open: () throws(CaptureError) -> CaptureReader) throws(CaptureError) -> Measurement {
    let reference = try decodeAll(try open())
    var seconds: [Double] = []
    seconds.reserveCapacity(runs)
    for _ in 0..<runs {
        let started = monotonicSeconds()
        let tally = try decodeAll(try open())
        let elapsed = monotonicSeconds() - started
        precondition(tally == reference, "decode passes disagree: \(tally) vs \(reference)")
        seconds.append(elapsed)
    }
    return Measurement(seconds: seconds, tally: reference)
}

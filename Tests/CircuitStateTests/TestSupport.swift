import BLEPayload
import CircuitState

let second: Int64 = 1_000_000

func address(_ number: UInt64) -> BluetoothAddress {
    BluetoothAddress(rawValue: 0xC0_00_00_00_00_00 | number)
}

extension FusionEngine {
    @discardableResult
    mutating func circuit(
        zone: UInt16 = 1, _ mode: GeoRacingMode, sequence: UInt16 = 1, ttl: UInt8 = 10,
        from sender: BluetoothAddress = address(1), rssi: Int8? = -60, txPower: Int8? = nil, temperature: UInt8? = nil,
        at time: Int64
    ) -> IngestOutcome {
        ingest(
            .circuit(zone: zone, mode: mode, sequence: sequence, ttl: ttl, temperature: temperature),
            address: sender, rssi: rssi, txPower: txPower, at: time)
    }

    @discardableResult
    mutating func staff(
        source: UInt32, zone: UInt16 = 1, _ mode: GeoRacingMode, sequence: UInt16 = 1, ttl: UInt8 = 10,
        from sender: BluetoothAddress = address(1), rssi: Int8? = -60, at time: Int64
    ) -> IngestOutcome {
        ingest(
            .staff(sourceID: source, zone: zone, mode: mode, sequence: sequence, ttl: ttl),
            address: sender, rssi: rssi, at: time)
    }

    /// The published state right after `time`, with nothing else changed.
    mutating func published(at time: Int64) -> PublishedState {
        evaluate(at: time)
    }

    func activeKeys(at time: Int64) -> [OverrideKey] {
        activeOverrides(at: time).map(\.key)
    }
}

/// One input of a generated scenario.
enum ScenarioInput: Sendable {
    case beacon(GeoRacingSignal, BluetoothAddress, rssi: Int8?)
    case fetched(RemoteSnapshot)
    case failed

    /// What the engine did with a beacon's frame; nil for race control's inputs.
    @discardableResult
    func apply(to engine: inout FusionEngine, at time: Int64) -> IngestOutcome? {
        switch self {
        case .beacon(let signal, let sender, let rssi):
            return engine.ingest(signal, address: sender, rssi: rssi, at: time)
        case .fetched(let snapshot): engine.remoteFetched(snapshot, at: time)
        case .failed: engine.remoteFailed(at: time, reason: "timeout")
        }
        return nil
    }
}

/// Runs timed inputs (stably sorted by time) through a `TimelineDriver` and returns every evaluation.
func drive(_ engine: inout FusionEngine, _ inputs: [(time: Int64, input: ScenarioInput)]) -> [PublishedState] {
    var states: [PublishedState] = []
    var driver = TimelineDriver(engine: engine)
    let ordered = inputs.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }
        .map(\.element)
    for (time, input) in ordered {
        driver.input(at: time, emit: { states.append($0) }) { input.apply(to: &$0, at: time) }
    }
    driver.finish { states.append($0) }
    engine = driver.engine
    return states
}

import BLEPayload
import BeacondTestSupport
import Foundation
import Logging
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// A bluez backend running against a test bus, stopped when the object goes away.
final class RunningBlueZBackend: @unchecked Sendable {
    let backend: BlueZScannerBackend
    let sink = RecordingSink()
    let logs: CapturingLogHandler.Store
    private let task: Task<Result<Void, any Error>, Never>

    init(
        address: String, adapter: String = "hci0", retries: Bool = true, silenceRestart: Int64 = 0,
        refresh: Int64 = 0, backoff: Int64 = 200_000
    ) throws {
        var configuration = BlueZScannerConfiguration()
        configuration.busAddress = address
        configuration.adapter = adapter
        configuration.retriesMissingAdapter = retries
        configuration.silenceRestart = silenceRestart
        configuration.refreshInterval = refresh
        configuration.initialBackoff = backoff
        configuration.maxBackoff = backoff * 4
        let (logger, logs) = CapturingLogHandler.logger()
        self.logs = logs
        backend = try BlueZScannerBackend(configuration: configuration, sink: sink, logger: logger)
        let backend = backend
        task = Task {
            do {
                try await backend.run()
                return .success(())
            } catch {
                return .failure(error)
            }
        }
    }

    deinit { backend.stop() }

    /// Stops the backend and waits for `run()` to return; the seconds it took and its result.
    func stop() async -> (seconds: Double, result: Result<Void, any Error>) {
        let started = ContinuousClock.now
        backend.stop()
        let result = await task.value
        let elapsed = ContinuousClock.now - started
        return (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, result)
    }

    /// Waits for `run()` to end on its own.
    func result(within seconds: Double) async -> Result<Void, any Error>? {
        await BeacondTestSupport.result(of: task, within: seconds)
    }
}

enum BlueZFixtures {
    static let address = "C0:FF:EE:00:00:01"
    static let devicePath = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01"

    /// A GeoRacing v1 frame (without the company id).
    static func frame(zone: UInt16 = 3, mode: GeoRacingMode = .redFlag, sequence: UInt16 = 1) -> [UInt8] {
        GeoRacingSignal.circuit(zone: zone, mode: mode, sequence: sequence, ttl: 10).encoded()
    }

    /// ManufacturerData as BlueZ sends it: `a{qv}` with `ay` values.
    static func manufacturerData(_ entries: [(UInt16, [UInt8])]) -> DBusValue {
        .dictionary(
            key: "q", value: "v", entries.map { DBusDictEntry(key: .uint16($0.0), value: .variant(.bytes($0.1))) })
    }

    /// The AD structures the backend rebuilds for one company's data.
    static func manufacturerAD(_ company: UInt16, _ data: [UInt8]) -> [UInt8] {
        [UInt8(data.count + 3), 0xFF, UInt8(company & 0xFF), UInt8(company >> 8)] + data
    }
}

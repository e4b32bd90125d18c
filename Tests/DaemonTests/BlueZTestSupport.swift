@testable import BeacondCore
import BLEPayload
import Foundation
import Logging
import Synchronization
import Testing

/// A private D-Bus bus with python-dbusmock's `bluez5` template as bluetoothd.
///
/// The bus is a `dbus-daemon` with a minimal system-like config written to a short temporary
/// directory (unix socket paths are limited to 107 bytes); the mock runs from the repository's
/// `.venv` (`make deps`). Tests drive the mock over a libdbus connection of their own. Every
/// process is killed when the object goes away, so a failing test cleans up too.
final class BlueZMockBus: @unchecked Sendable {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `<repo>/.venv/bin/python3`, or an error telling to run `make deps`.
    static func python() throws -> String {
        let python = repository.appendingPathComponent(".venv/bin/python3").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw BlueZTestError("python-dbusmock is missing: \(python) does not exist; run `make deps` (it creates .venv)")
        }
        return python
    }

    let directory: String
    let address: String
    private let socketPath: String
    private let extraPolicy: String
    private var bus: Process?
    private var mock: Process?
    private var controlConnection: DBusConnection?

    /// Starts the bus. `extraPolicy` goes into the default policy after the allow rules, for
    /// example a `<deny .../>`.
    init(extraPolicy: String = "") async throws {
        var template = Array("/tmp/bzmXXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw BlueZTestError("mkdtemp failed") }
        directory = String(cString: made)
        socketPath = directory + "/bus"
        address = "unix:path=" + socketPath
        self.extraPolicy = extraPolicy
        try await startBus()
    }

    deinit {
        shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Kills the mock and the bus.
    func shutdown() {
        controlConnection?.close()
        controlConnection = nil
        stopBlueZ()
        stopBus()
    }

    // MARK: Processes

    func startBus() async throws {
        let config = directory + "/bus.conf"
        let template = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/test-system-bus.conf")
        try String(contentsOf: template, encoding: .utf8)
            .replacingOccurrences(of: "@SOCKET@", with: socketPath)
            .replacingOccurrences(of: "@EXTRA_POLICY@", with: extraPolicy)
            .write(toFile: config, atomically: true, encoding: .utf8)
        try? FileManager.default.removeItem(atPath: socketPath)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--config-file=\(config)", "--nofork", "--nopidfile"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        bus = process
        guard await BlueZPoll.until(within: 5, { FileManager.default.fileExists(atPath: socketPath) }) else {
            throw BlueZTestError("dbus-daemon did not create \(socketPath)")
        }
    }

    func stopBus() {
        controlConnection?.close()
        controlConnection = nil
        Self.kill(bus)
        bus = nil
    }

    /// Starts `python3 -m dbusmock --template bluez5` and waits until it owns org.bluez.
    /// `parameters` is the template's JSON, for example `{"enable_monitor_api": false}`.
    func startBlueZ(parameters: String? = nil) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Self.python())
        process.arguments = ["-m", "dbusmock", "--template", "bluez5", "-l", directory + "/mock.log"]
            + (parameters.map { ["-p", $0] } ?? [])
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = address
        process.environment = environment
        _ = FileManager.default.createFile(atPath: directory + "/mock.err", contents: nil)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: directory + "/mock.err") ?? FileHandle.nullDevice
        try process.run()
        mock = process
        guard await BlueZPoll.until(within: 15, { (try? self.blueZOwner()) != nil }) else {
            throw BlueZTestError("dbusmock did not take org.bluez within 15 s")
        }
    }

    func stopBlueZ() {
        Self.kill(mock)
        mock = nil
    }

    /// SIGKILL: the bus and the mock need no graceful exit, and their sockets close either way.
    private static func kill(_ process: Process?) {
        guard let process, process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    // MARK: Driving the mock

    /// The test's own connection to the bus.
    func control() throws -> DBusConnection {
        if let controlConnection, controlConnection.isConnected { return controlConnection }
        let connection = try DBusConnection(address: address)
        controlConnection = connection
        return connection
    }

    /// Calls a method and returns the reply's arguments.
    @discardableResult
    func call(_ destination: String, _ path: String, _ interface: String, _ member: String,
              _ arguments: [DBusValue] = []) throws -> [DBusValue] {
        let message = try DBusMessage.methodCall(destination: destination, path: path, interface: interface,
                                                 member: member, arguments: arguments)
        let reply = try control().call(message, timeout: 5000)
        var reader = reply.reader
        return try reader.values()
    }

    func blueZOwner() throws -> String? {
        try call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
                 [.string("org.bluez")]).first?.text
    }

    @discardableResult
    func addAdapter(_ name: String = "hci0") throws -> String {
        try call("org.bluez", "/", "org.bluez.Mock", "AddAdapter", [.string(name), .string("beacond test")]).first?.text ?? ""
    }

    func removeAdapter(_ name: String = "hci0") throws {
        try call("org.bluez", "/", "org.bluez.Mock", "RemoveAdapter", [.string(name)])
    }

    @discardableResult
    func addDevice(_ address: String, adapter: String = "hci0") throws -> String {
        try call("org.bluez", "/", "org.bluez.Mock", "AddDevice", [.string(adapter), .string(address), .string("beacon")])
            .first?.text ?? ""
    }

    /// Sets properties on a mock object; the mock emits PropertiesChanged with them.
    func update(_ path: String, interface: String = "org.bluez.Device1", _ properties: KeyValuePairs<String, DBusValue>) throws {
        try call("org.bluez", path, "org.freedesktop.DBus.Mock", "UpdateProperties",
                 [.string(interface), .properties(properties)])
    }

    /// The mock's method-call log for the object at `path`: (method, arguments).
    func calls(_ path: String) throws -> [(method: String, arguments: [DBusValue])] {
        let log = try call("org.bluez", path, "org.freedesktop.DBus.Mock", "GetCalls").first?.elements ?? []
        return log.compactMap { entry in
            guard let fields = entry.elements, fields.count == 3, let method = fields[1].text else { return nil }
            return (method, (fields[2].elements ?? []).map(\.unwrapped))
        }
    }

    func methods(_ path: String) throws -> [String] { try calls(path).map(\.method) }

    /// The unique names on the bus other than ours and the mock's: the backend under test.
    func otherClients() throws -> [String] {
        let names = try call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListNames")
            .first?.elements?.compactMap(\.text) ?? []
        let excluded: Set<String> = [try control().uniqueName, try blueZOwner() ?? "", "org.freedesktop.DBus"]
        return names.filter { $0.hasPrefix(":") && !excluded.contains($0) }
    }
}

struct BlueZTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

enum BlueZPoll {
    /// Polls `condition` every 10 ms for up to `seconds`. Sleeps with `Task.sleep`, so a
    /// waiting test never blocks a cooperative thread other tests need.
    static func until(within seconds: Double, _ condition: () -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}

/// Keeps what a backend hands its sink.
final class BlueZRecordingSink: AdvertisementSink {
    private let reportsSeen = Mutex<[OwnedAdvertisingReport]>([])
    private let statesSeen = Mutex<[(state: ScannerStatus.State, detail: String?)]>([])
    private let flushes = Atomic<Int>(0)

    var reports: [OwnedAdvertisingReport] { reportsSeen.withLock { $0 } }
    var states: [(state: ScannerStatus.State, detail: String?)] { statesSeen.withLock { $0 } }
    var flushCount: Int { flushes.load(ordering: .relaxed) }

    func receive(_ report: AdvertisingReport, bootMicros: Int64) {
        let owned = report.owned()
        reportsSeen.withLock { $0.append(owned) }
    }

    func flush() { flushes.add(1, ordering: .relaxed) }

    func scannerStateChanged(_ state: ScannerStatus.State, detail: String?) {
        statesSeen.withLock { $0.append((state, detail)) }
    }

    func waitForReports(_ count: Int, within seconds: Double = 5) async -> Bool {
        await BlueZPoll.until(within: seconds) { reports.count >= count }
    }

    /// Waits for a state change to `state` (whose detail contains `detail`) after the first
    /// `after` changes.
    func waitForState(_ state: ScannerStatus.State, containing detail: String = "", after: Int = 0,
                      within seconds: Double = 5) async -> Bool {
        await BlueZPoll.until(within: seconds) {
            states.dropFirst(after).contains { $0.state == state && (detail.isEmpty || ($0.detail ?? "").contains(detail)) }
        }
    }
}

/// A bluez backend running against a test bus, stopped when the object goes away.
final class RunningBlueZBackend: @unchecked Sendable {
    let backend: BlueZScannerBackend
    let sink = BlueZRecordingSink()
    let logs: CapturingLogHandler.Store
    private let task: Task<Result<Void, any Error>, Never>

    init(address: String, adapter: String = "hci0", retries: Bool = true, silenceRestart: Int64 = 0,
         backoff: Int64 = 200_000) {
        var configuration = BlueZScannerConfiguration()
        configuration.busAddress = address
        configuration.adapter = adapter
        configuration.retriesMissingAdapter = retries
        configuration.silenceRestart = silenceRestart
        configuration.initialBackoff = backoff
        configuration.maxBackoff = backoff * 4
        let (logger, logs) = CapturingLogHandler.logger()
        self.logs = logs
        backend = BlueZScannerBackend(configuration: configuration, sink: sink, logger: logger)
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
        let task = task
        return await withTaskGroup(of: Result<Void, any Error>?.self) { group in
            group.addTask { await task.value }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
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
        .dictionary(key: "q", value: "v", entries.map { DBusDictEntry(key: .uint16($0.0), value: .variant(.bytes($0.1))) })
    }

    /// The AD structures the backend rebuilds for one company's data.
    static func manufacturerAD(_ company: UInt16, _ data: [UInt8]) -> [UInt8] {
        [UInt8(data.count + 3), 0xFF, UInt8(company & 0xFF), UInt8(company >> 8)] + data
    }
}

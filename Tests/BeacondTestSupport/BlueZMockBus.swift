import BeacondCore
import Foundation
import Glibc

/// A private D-Bus bus with python-dbusmock's `bluez5` template as bluetoothd.
///
/// The bus is a `dbus-daemon` with a minimal system-like config written to a short temporary
/// directory (unix socket paths are limited to 107 bytes); the mock runs from the repository's
/// `.venv` (`make deps`). Tests drive the mock over a libdbus connection of their own. Every
/// process is killed when the object goes away, so a failing test cleans up too.
package final class BlueZMockBus: @unchecked Sendable {
    /// `<repo>/.venv/bin/python3`, or an error telling to run `make deps`.
    package static func python() throws -> String {
        let python = RepositoryPaths.root.appendingPathComponent(".venv/bin/python3").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw TestSupportError(
                "python-dbusmock is missing: \(python) does not exist; run `make deps` (it creates .venv)")
        }
        return python
    }

    private let scratch: TemporaryDirectory
    package let directory: String
    package let address: String
    private let socketPath: String
    private let extraPolicy: String
    private var bus: Process?
    private var mock: Process?
    private var controlConnection: DBusConnection?

    /// Starts the bus. `extraPolicy` goes into the default policy after the allow rules, for
    /// example a `<deny .../>`.
    package init(extraPolicy: String = "") async throws {
        scratch = try TemporaryDirectory(prefix: "bzm", short: true)
        directory = scratch.path
        socketPath = directory + "/bus"
        address = "unix:path=" + socketPath
        self.extraPolicy = extraPolicy
        try await startBus()
    }

    /// A bus with the mock running and adapter `adapter` added, as the end-to-end tests want it.
    package static func started(adapter: String = "hci0") async throws -> BlueZMockBus {
        let bus = try await BlueZMockBus()
        try await bus.startBlueZ()
        try bus.addAdapter(adapter)
        return bus
    }

    deinit { shutdown() }

    /// Kills the mock and the bus.
    package func shutdown() {
        controlConnection?.close()
        controlConnection = nil
        stopBlueZ()
        stopBus()
    }

    // MARK: Processes

    package func startBus() async throws {
        let config = directory + "/bus.conf"
        let template = URL(fileURLWithPath: RepositoryPaths.fixture("test-system-bus.conf"))
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
        let socketPath = socketPath
        guard
            await waitUntil(
                within: 5, every: .milliseconds(10),
                {
                    FileManager.default.fileExists(atPath: socketPath)
                })
        else {
            throw TestSupportError("dbus-daemon did not create \(socketPath)")
        }
    }

    package func stopBus() {
        controlConnection?.close()
        controlConnection = nil
        Self.kill(bus)
        bus = nil
    }

    /// Starts `python3 -m dbusmock --template bluez5` and waits until it owns org.bluez.
    /// `parameters` is the template's JSON, for example `{"enable_monitor_api": false}`.
    package func startBlueZ(parameters: String? = nil) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Self.python())
        process.arguments =
            ["-m", "dbusmock", "--template", "bluez5", "-l", directory + "/mock.log"]
            + (parameters.map { ["-p", $0] } ?? [])
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = address
        process.environment = environment
        _ = FileManager.default.createFile(atPath: directory + "/mock.err", contents: nil)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: directory + "/mock.err") ?? FileHandle.nullDevice
        try process.run()
        mock = process
        guard await waitUntil(within: 15, every: .milliseconds(10), { (try? self.blueZOwner()) != nil }) else {
            throw TestSupportError("dbusmock did not take org.bluez within 15 s")
        }
    }

    package func stopBlueZ() {
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
    package func control() throws -> DBusConnection {
        if let controlConnection, controlConnection.isConnected { return controlConnection }
        let connection = try DBusConnection(address: address)
        controlConnection = connection
        return connection
    }

    /// Calls a method and returns the reply's arguments.
    @discardableResult
    package func call(
        _ destination: String, _ path: String, _ interface: String, _ member: String,
        _ arguments: [DBusValue] = []
    ) throws -> [DBusValue] {
        let message = try DBusMessage.methodCall(
            destination: destination, path: path, interface: interface,
            member: member, arguments: arguments)
        let reply = try control().call(message, timeout: 5000)
        var reader = reply.reader
        return try reader.values()
    }

    package func blueZOwner() throws -> String? {
        try call(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
            [.string("org.bluez")]
        ).first?.text
    }

    @discardableResult
    package func addAdapter(_ name: String = "hci0") throws -> String {
        try call("org.bluez", "/", "org.bluez.Mock", "AddAdapter", [.string(name), .string("beacond test")])
            .first?.text ?? ""
    }

    package func removeAdapter(_ name: String = "hci0") throws {
        try call("org.bluez", "/", "org.bluez.Mock", "RemoveAdapter", [.string(name)])
    }

    @discardableResult
    package func addDevice(_ address: String, adapter: String = "hci0") throws -> String {
        try call(
            "org.bluez", "/", "org.bluez.Mock", "AddDevice",
            [.string(adapter), .string(address), .string("beacon")]
        )
        .first?.text ?? ""
    }

    /// Sets properties on a mock object; the mock emits PropertiesChanged with them.
    package func update(
        _ path: String, interface: String = "org.bluez.Device1",
        _ properties: KeyValuePairs<String, DBusValue>
    ) throws {
        try call(
            "org.bluez", path, "org.freedesktop.DBus.Mock", "UpdateProperties",
            [.string(interface), .properties(properties)])
    }

    /// The mock's method-call log for the object at `path`: (method, arguments).
    package func calls(_ path: String) throws -> [(method: String, arguments: [DBusValue])] {
        let log = try call("org.bluez", path, "org.freedesktop.DBus.Mock", "GetCalls").first?.elements ?? []
        return log.compactMap { entry in
            guard let fields = entry.elements, fields.count == 3, let method = fields[1].text else { return nil }
            return (method, (fields[2].elements ?? []).map(\.unwrapped))
        }
    }

    package func methods(_ path: String) throws -> [String] { try calls(path).map(\.method) }

    /// What a beacon's advertisement does to its Device1 object: new ManufacturerData
    /// (company 0x1234) and RSSI, in one PropertiesChanged.
    package func advertise(_ path: String, frame: [UInt8], rssi: Int16) throws {
        let data = DBusValue.dictionary(
            key: "q", value: "v",
            [DBusDictEntry(key: .uint16(0x1234), value: .variant(.bytes(frame)))])
        try update(path, ["ManufacturerData": data, "RSSI": .int16(rssi)])
    }

    /// The methods the mock's adapter object was called with, in order.
    package func adapterCalls(_ name: String = "hci0") throws -> [(method: String, arguments: [DBusValue])] {
        try calls("/org/bluez/" + name)
    }

    /// The unique names on the bus other than ours and the mock's: the backend under test.
    package func otherClients() throws -> [String] {
        let names =
            try call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListNames")
            .first?.elements?.compactMap(\.text) ?? []
        let excluded: Set<String> = [try control().uniqueName, try blueZOwner() ?? "", "org.freedesktop.DBus"]
        return names.filter { $0.hasPrefix(":") && !excluded.contains($0) }
    }
}

@testable import BeacondCore
import Foundation

/// bluetoothd for end-to-end tests: a private `dbus-daemon` with a minimal system-like config
/// and python-dbusmock's `bluez5` template from the repository's `.venv` (`make deps`), driven
/// over the test's own libdbus connection. Processes are killed when the object goes away.
final class MockBlueZ: @unchecked Sendable {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    let directory: String
    let address: String
    private var processes: [Process] = []
    private var connection: DBusConnection?

    /// Starts the bus and the mock, and adds adapter `adapter`.
    init(adapter: String = "hci0") throws {
        let python = Self.repository.appendingPathComponent(".venv/bin/python3").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw MockBlueZError("python-dbusmock is missing: \(python) does not exist; run `make deps` (it creates .venv)")
        }
        var template = Array("/tmp/bzeXXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw MockBlueZError("mkdtemp failed") }
        directory = String(cString: made)
        let socket = directory + "/bus"
        address = "unix:path=" + socket
        let config = directory + "/bus.conf"
        try String(contentsOf: Self.repository.appendingPathComponent("Tests/Fixtures/test-system-bus.conf"), encoding: .utf8)
            .replacingOccurrences(of: "@SOCKET@", with: socket)
            .replacingOccurrences(of: "@EXTRA_POLICY@", with: "")
            .write(toFile: config, atomically: true, encoding: .utf8)
        try launch("/usr/bin/dbus-daemon", ["--config-file=\(config)", "--nofork", "--nopidfile"])
        guard Self.poll(within: 5, { FileManager.default.fileExists(atPath: socket) }) else {
            throw MockBlueZError("dbus-daemon did not create \(socket)")
        }
        try launch(python, ["-m", "dbusmock", "--template", "bluez5", "-l", directory + "/mock.log"])
        guard Self.poll(within: 15, { (try? self.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                                      "GetNameOwner", [.string("org.bluez")])) != nil }) else {
            throw MockBlueZError("dbusmock did not take org.bluez within 15 s")
        }
        try addAdapter(adapter)
    }

    deinit {
        connection?.close()
        // SIGKILL: neither needs a graceful exit, and a SIGTERM may be ignored (the disposition
        // is inherited from the test process).
        for process in processes.reversed() where process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func launch(_ executable: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = address
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        processes.append(process)
    }

    static func poll(within seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    @discardableResult
    func call(_ destination: String, _ path: String, _ interface: String, _ member: String,
              _ arguments: [DBusValue] = []) throws -> [DBusValue] {
        if connection == nil { connection = try DBusConnection(address: address) }
        guard let connection else { throw MockBlueZError("no connection") }
        let reply = try connection.call(
            try DBusMessage.methodCall(destination: destination, path: path, interface: interface, member: member,
                                       arguments: arguments),
            timeout: 5000)
        var reader = reply.reader
        return try reader.values()
    }

    func addAdapter(_ name: String = "hci0") throws {
        try call("org.bluez", "/", "org.bluez.Mock", "AddAdapter", [.string(name), .string("beacond e2e")])
    }

    func removeAdapter(_ name: String = "hci0") throws {
        try call("org.bluez", "/", "org.bluez.Mock", "RemoveAdapter", [.string(name)])
    }

    /// Adds a device under hci0; its object path.
    func addDevice(_ address: String) throws -> String {
        try call("org.bluez", "/", "org.bluez.Mock", "AddDevice", [.string("hci0"), .string(address), .string("beacon")])
            .first?.text ?? ""
    }

    /// What a beacon's advertisement does to its Device1 object: new ManufacturerData
    /// (company 0x1234) and RSSI, in one PropertiesChanged.
    func advertise(_ path: String, frame: [UInt8], rssi: Int16) throws {
        let data = DBusValue.dictionary(key: "q", value: "v", [DBusDictEntry(key: .uint16(0x1234), value: .variant(.bytes(frame)))])
        try call("org.bluez", path, "org.freedesktop.DBus.Mock", "UpdateProperties",
                 [.string("org.bluez.Device1"), .properties(["ManufacturerData": data, "RSSI": .int16(rssi)])])
    }

    /// The methods the mock's adapter object was called with, in order.
    func adapterCalls(_ name: String = "hci0") throws -> [(method: String, arguments: [DBusValue])] {
        let log = try call("org.bluez", "/org/bluez/" + name, "org.freedesktop.DBus.Mock", "GetCalls").first?.elements ?? []
        return log.compactMap { entry in
            guard let fields = entry.elements, fields.count == 3, let method = fields[1].text else { return nil }
            return (method, (fields[2].elements ?? []).map(\.unwrapped))
        }
    }
}

struct MockBlueZError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

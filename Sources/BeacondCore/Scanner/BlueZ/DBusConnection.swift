import CBlueZ

/// A D-Bus call failed: the error name and message from the peer, the bus or libdbus, and
/// which call it was.
package struct DBusCallError: Error, Hashable, Sendable, CustomStringConvertible {
    static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
    static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
    static let nameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner"
    static let noReply = "org.freedesktop.DBus.Error.NoReply"
    static let disconnected = "org.freedesktop.DBus.Error.Disconnected"
    static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
    static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"

    /// The D-Bus error name, for example "org.freedesktop.DBus.Error.AccessDenied".
    var name: String
    var message: String
    /// What was attempted, for example "org.bluez.Adapter1.StartDiscovery on /org/bluez/hci0".
    var operation: String

    package var description: String { "\(operation): \(message) (\(name))" }

    var isAccessDenied: Bool { name == Self.accessDenied || name == "org.bluez.Error.NotAuthorized" }
    /// Nobody owns the destination name: for org.bluez, bluetoothd is not running.
    var isServiceMissing: Bool { name == Self.serviceUnknown || name == Self.nameHasNoOwner }

    /// Takes (and frees) a set libdbus error.
    init(_ error: inout DBusError, operation: String) {
        name = error.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
        message = error.message.map { String(cString: $0) } ?? "unknown error"
        self.operation = operation
        dbus_error_free(&error)
    }

    init(name: String, message: String, operation: String) {
        self.name = name
        self.message = message
        self.operation = operation
    }
}

/// One libdbus message, released with the wrapper.
package final class DBusMessage {
    let raw: OpaquePointer

    /// Adopts a message the caller owns a reference to.
    init(owning raw: OpaquePointer) { self.raw = raw }

    /// Wraps a message borrowed for the duration of a callback, taking a reference.
    init(retaining raw: OpaquePointer) {
        dbus_message_ref(raw)
        self.raw = raw
    }

    deinit { dbus_message_unref(raw) }

    package static func methodCall(
        destination: String?, path: String, interface: String?, member: String, autoStart: Bool = true,
        arguments: [DBusValue] = []
    ) throws(DBusEncodingError) -> DBusMessage {
        try validate(path: path, interface: interface, member: member, destination: destination)
        let created = withOptionalCString(destination) { destination in
            withOptionalCString(interface) { interface in
                path.withCString { path in
                    member.withCString { dbus_message_new_method_call(destination, path, interface, $0) }
                }
            }
        }
        guard let created else { throw DBusEncodingError(reason: "out of memory creating a call to \(member)") }
        let message = DBusMessage(owning: created)
        if !autoStart { dbus_message_set_auto_start(created, 0) }
        try message.append(arguments)
        return message
    }

    static func signal(path: String, interface: String, member: String, arguments: [DBusValue] = [])
        throws(DBusEncodingError) -> DBusMessage
    {
        try validate(path: path, interface: interface, member: member, destination: nil)
        let created = path.withCString { path in
            interface.withCString { interface in member.withCString { dbus_message_new_signal(path, interface, $0) } }
        }
        guard let created else { throw DBusEncodingError(reason: "out of memory creating signal \(member)") }
        let message = DBusMessage(owning: created)
        try message.append(arguments)
        return message
    }

    /// The reply to the method call `call`.
    static func methodReturn(to call: OpaquePointer, arguments: [DBusValue] = []) throws(DBusEncodingError)
        -> DBusMessage
    {
        guard let created = dbus_message_new_method_return(call) else {
            throw DBusEncodingError(reason: "out of memory creating a method return")
        }
        let message = DBusMessage(owning: created)
        try message.append(arguments)
        return message
    }

    /// An error reply to the method call `call`; `name` must be a valid error name.
    static func error(to call: OpaquePointer, name: String, text: String) throws(DBusEncodingError) -> DBusMessage {
        guard name.withCString({ dbus_validate_error_name($0, nil) }) != 0, !text.utf8.contains(0) else {
            throw DBusEncodingError(reason: "'\(name)' is not a valid error name")
        }
        let created = name.withCString { name in text.withCString { dbus_message_new_error(call, name, $0) } }
        guard let created else { throw DBusEncodingError(reason: "out of memory creating error \(name)") }
        return DBusMessage(owning: created)
    }

    func append(_ arguments: [DBusValue]) throws(DBusEncodingError) {
        guard !arguments.isEmpty else { return }
        var writer = DBusMessageWriter(appendingTo: raw)
        for argument in arguments { try writer.append(argument) }
    }

    /// A reader over the arguments; keep the message alive while it is used.
    package var reader: DBusMessageReader { DBusMessageReader(message: raw) }

    var type: Int32 { dbus_message_get_type(raw) }
    var path: String? { dbus_message_get_path(raw).map { String(cString: $0) } }
    var interface: String? { dbus_message_get_interface(raw).map { String(cString: $0) } }
    var member: String? { dbus_message_get_member(raw).map { String(cString: $0) } }
    var sender: String? { dbus_message_get_sender(raw).map { String(cString: $0) } }
    var errorName: String? { dbus_message_get_error_name(raw).map { String(cString: $0) } }

    /// "interface.member on path", for errors and logs.
    var operation: String {
        "\(interface.map { $0 + "." } ?? "")\(member ?? "?") on \(path ?? "?")"
    }

    private static func validate(path: String, interface: String?, member: String, destination: String?)
        throws(DBusEncodingError)
    {
        guard DBusMessageWriter.isValidPath(path) else {
            throw DBusEncodingError(reason: "'\(path)' is not a valid object path")
        }
        if let interface, interface.utf8.contains(0) || interface.withCString({ dbus_validate_interface($0, nil) }) == 0
        {
            throw DBusEncodingError(reason: "'\(interface)' is not a valid interface name")
        }
        if member.utf8.contains(0) || member.withCString({ dbus_validate_member($0, nil) }) == 0 {
            throw DBusEncodingError(reason: "'\(member)' is not a valid member name")
        }
        if let destination,
            destination.utf8.contains(0) || destination.withCString({ dbus_validate_bus_name($0, nil) }) == 0
        {
            throw DBusEncodingError(reason: "'\(destination)' is not a valid bus name")
        }
    }
}

private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}

/// A call sent without blocking; poll `isComplete`, then take the reply.
final class DBusPendingReply {
    private let raw: OpaquePointer
    let operation: String

    fileprivate init(raw: OpaquePointer, operation: String) {
        self.raw = raw
        self.operation = operation
    }

    deinit { dbus_pending_call_unref(raw) }

    var isComplete: Bool { dbus_pending_call_get_completed(raw) != 0 }

    /// The reply, or the error it carries (a timeout is a NoReply error from libdbus).
    func result() -> Result<DBusMessage, DBusCallError>? {
        guard isComplete, let reply = dbus_pending_call_steal_reply(raw) else { return nil }
        let message = DBusMessage(owning: reply)
        if message.type == DBUS_MESSAGE_TYPE_ERROR {
            var reader = message.reader
            let text = (try? reader.string()) ?? ""
            return .failure(
                DBusCallError(
                    name: message.errorName ?? "org.freedesktop.DBus.Error.Failed", message: text,
                    operation: operation))
        }
        return .success(message)
    }

    func cancel() { dbus_pending_call_cancel(raw) }
}

/// One private libdbus connection, used from one thread.
///
/// Private, so closing it never disturbs another user of the shared system-bus connection,
/// and with exit-on-disconnect off: libdbus would otherwise `_exit` the daemon when the bus
/// goes away.
package final class DBusConnection {
    /// Incoming messages that are not replies go to `handler`; true means handled.
    private final class FilterBox {
        var handler: ((OpaquePointer) -> Bool)?
    }

    let raw: OpaquePointer
    private var filter: FilterBox?
    private var closed = false

    /// Connects to the bus at `address` (a D-Bus address such as "unix:path=/run/x"), or with
    /// nil to the system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else /run/dbus/system_bus_socket).
    package init(address: String?) throws(DBusCallError) {
        dbus_threads_init_default()
        var error = DBusError()
        dbus_error_init(&error)
        let operation = "connecting to \(address ?? "the system bus")"
        if let address {
            guard let connection = address.withCString({ dbus_connection_open_private($0, &error) }) else {
                throw DBusCallError(&error, operation: operation)
            }
            dbus_connection_set_exit_on_disconnect(connection, 0)
            guard dbus_bus_register(connection, &error) != 0 else {
                dbus_connection_close(connection)
                dbus_connection_unref(connection)
                throw DBusCallError(&error, operation: operation)
            }
            raw = connection
        } else {
            guard let connection = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error) else {
                throw DBusCallError(&error, operation: operation)
            }
            dbus_connection_set_exit_on_disconnect(connection, 0)
            raw = connection
        }
    }

    deinit {
        close()
        dbus_connection_unref(raw)
    }

    /// Closes the connection and drops the message handler.
    package func close() {
        guard !closed else { return }
        closed = true
        filter?.handler = nil
        dbus_connection_close(raw)
    }

    package var isConnected: Bool { !closed && dbus_connection_get_is_connected(raw) != 0 }

    /// Our unique name on the bus, for example ":1.42".
    package var uniqueName: String { dbus_bus_get_unique_name(raw).map { String(cString: $0) } ?? "" }

    /// Sends `message` and waits up to `timeout` ms for the reply. Signals that arrive meanwhile
    /// are queued for the next dispatch.
    package func call(_ message: DBusMessage, timeout: Int32) throws(DBusCallError) -> DBusMessage {
        var error = DBusError()
        dbus_error_init(&error)
        guard let reply = dbus_connection_send_with_reply_and_block(raw, message.raw, timeout, &error) else {
            throw DBusCallError(&error, operation: message.operation)
        }
        return DBusMessage(owning: reply)
    }

    /// Sends `message` and returns at once; the reply arrives while dispatching. Use this when
    /// the peer calls back into us before it replies (bluetoothd does for RegisterMonitor).
    func callLater(_ message: DBusMessage, timeout: Int32) throws(DBusCallError) -> DBusPendingReply {
        var pending: OpaquePointer?
        guard dbus_connection_send_with_reply(raw, message.raw, &pending, timeout) != 0, let pending else {
            throw DBusCallError(
                name: DBusCallError.disconnected, message: "the connection is closed",
                operation: message.operation)
        }
        return DBusPendingReply(raw: pending, operation: message.operation)
    }

    /// Queues `message` (a signal or a reply) for sending. False when out of memory.
    @discardableResult
    func send(_ message: DBusMessage) -> Bool {
        dbus_connection_send(raw, message.raw, nil) != 0
    }

    /// Asks the bus to route signals matching `rule` to us.
    func addMatch(_ rule: String) throws(DBusCallError) {
        var error = DBusError()
        dbus_error_init(&error)
        rule.withCString { dbus_bus_add_match(raw, $0, &error) }
        if dbus_error_is_set(&error) != 0 { throw DBusCallError(&error, operation: "AddMatch \(rule)") }
    }

    /// Installs the handler for incoming signals and method calls (one per connection).
    func setMessageHandler(_ handler: @escaping (OpaquePointer) -> Bool) {
        if let filter {
            filter.handler = handler
            return
        }
        let box = FilterBox()
        box.handler = handler
        filter = box
        let added = dbus_connection_add_filter(
            raw,
            { _, message, userData in
                guard let message, let userData,
                    let handler = Unmanaged<FilterBox>.fromOpaque(userData).takeUnretainedValue().handler
                else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
                return handler(message) ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
            }, Unmanaged.passRetained(box).toOpaque(),
            { userData in
                guard let userData else { return }
                Unmanaged<FilterBox>.fromOpaque(userData).release()
            })
        if added == 0 { filter = nil }
    }

    /// Runs every queued message through the handler.
    func dispatchAll() {
        while dbus_connection_dispatch(raw) == DBUS_DISPATCH_DATA_REMAINS {}
    }

    /// True when messages are waiting to be dispatched.
    var hasQueuedMessages: Bool { dbus_connection_get_dispatch_status(raw) == DBUS_DISPATCH_DATA_REMAINS }

    /// Blocks up to `timeout` ms for the socket, then reads and writes what it can. False once
    /// the connection is lost.
    func readWrite(timeout: Int32) -> Bool {
        dbus_connection_read_write(raw, timeout) != 0
    }

    /// Writes every queued outgoing message.
    func flush() { dbus_connection_flush(raw) }
}

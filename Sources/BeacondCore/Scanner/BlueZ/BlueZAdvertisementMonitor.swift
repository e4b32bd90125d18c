import CBlueZ

/// The advertisement monitor beacond exports on its D-Bus connection and registers with
/// `org.bluez.AdvertisementMonitorManager1.RegisterMonitor`.
///
/// Why: during discovery the kernel leaves the controller's duplicate filter on unless an
/// advertisement monitor is active (hci_sync.c), so a beacon repeating the same frame would be
/// reported once and its override would expire while it is still on air. A monitor bluetoothd
/// has activated turns the filter off (until then the scan loop restarts discovery instead); its
/// pattern (manufacturer data starting with our company id) is what bluetoothd needs to accept
/// it, and RSSISamplingPeriod 0 asks for every packet where the controller offloads monitoring.
///
/// The tree: `root` implements ObjectManager (bluetoothd reads the monitors with
/// GetManagedObjects), `path` implements `org.bluez.AdvertisementMonitor1` with Properties and
/// Introspectable. The methods bluetoothd calls are answered and reported as events.
struct BlueZAdvertisementMonitor: Sendable {
    static let defaultRoot = "/org/georacing/beacond/monitor"
    static let interface = "org.bluez.AdvertisementMonitor1"
    static let managerInterface = "org.bluez.AdvertisementMonitorManager1"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
    static let properties = "org.freedesktop.DBus.Properties"
    static let introspectable = "org.freedesktop.DBus.Introspectable"

    /// What bluetoothd told the monitor.
    enum Event: Equatable, Sendable {
        case activated
        case released
        case deviceFound(String)
        case deviceLost(String)
    }

    let root: String
    let path: String
    let companyID: UInt16

    init(root: String = defaultRoot, companyID: UInt16) {
        self.root = root
        path = root + "/georacing"
        self.companyID = companyID
    }

    /// The monitor's properties, as GetAll and GetManagedObjects return them.
    var propertyValues: KeyValuePairs<String, DBusValue> {
        [
            "Type": .string("or_patterns"),
            "Patterns": .array(
                element: "(yyay)",
                [
                    .structure([
                        .byte(0), .byte(0xFF), .bytes([UInt8(truncatingIfNeeded: companyID), UInt8(companyID >> 8)]),
                    ])
                ]),
            "RSSISamplingPeriod": .uint16(0),
        ]
    }

    /// GetManagedObjects' reply value, `a{oa{sa{sv}}}`.
    var managedObjects: DBusValue {
        .dictionary(
            key: "o", value: "a{sa{sv}}",
            [
                DBusDictEntry(
                    key: .objectPath(path),
                    value: .dictionary(
                        key: "s", value: "a{sv}",
                        [
                            DBusDictEntry(key: .string(Self.interface), value: .properties(propertyValues))
                        ]))
            ])
    }

    /// Answers `call` if it is addressed to the monitor's objects: the reply to send (nil for
    /// calls that want none) and what it told us. Nil when the message is not ours.
    func handle(_ call: OpaquePointer) -> (reply: DBusMessage?, event: Event?)? {
        guard dbus_message_get_type(call) == DBUS_MESSAGE_TYPE_METHOD_CALL,
            let rawPath = dbus_message_get_path(call)
        else { return nil }
        let isRoot = strcmp(rawPath, root) == 0
        let isMonitor = strcmp(rawPath, path) == 0
        guard isRoot || isMonitor else { return nil }
        let wantsReply = dbus_message_get_no_reply(call) == 0
        do {
            let (arguments, event) = try answer(call, isRoot: isRoot)
            let reply = try DBusMessage.methodReturn(to: call, arguments: arguments)
            return (wantsReply ? reply : nil, event)
        } catch let failure as MethodFailure {
            let reply = try? DBusMessage.error(to: call, name: failure.name, text: failure.text)
            return (wantsReply ? reply : nil, nil)
        } catch {
            let reply = try? DBusMessage.error(to: call, name: "org.freedesktop.DBus.Error.Failed", text: "\(error)")
            return (wantsReply ? reply : nil, nil)
        }
    }

    private struct MethodFailure: Error {
        var name: String
        var text: String
    }

    private func isCall(_ call: OpaquePointer, _ interface: String, _ member: String) -> Bool {
        dbus_message_is_method_call(call, interface, member) != 0
    }

    private func answer(_ call: OpaquePointer, isRoot: Bool) throws -> ([DBusValue], Event?) {
        if isCall(call, Self.introspectable, "Introspect") {
            return ([.string(isRoot ? rootIntrospection : monitorIntrospection)], nil)
        }
        if isRoot {
            if isCall(call, Self.objectManager, "GetManagedObjects") { return ([managedObjects], nil) }
            throw unknownMethod(call)
        }
        if isCall(call, Self.interface, "Activate") { return ([], .activated) }
        if isCall(call, Self.interface, "Release") { return ([], .released) }
        if isCall(call, Self.interface, "DeviceFound") { return ([], .deviceFound(objectArgument(call))) }
        if isCall(call, Self.interface, "DeviceLost") { return ([], .deviceLost(objectArgument(call))) }
        if isCall(call, Self.properties, "GetAll") {
            var reader = DBusMessageReader(message: call)
            let interface = try reader.string()
            guard interface == Self.interface else {
                throw MethodFailure(
                    name: "org.freedesktop.DBus.Error.UnknownInterface", text: "no interface \(interface) here")
            }
            return ([.properties(propertyValues)], nil)
        }
        if isCall(call, Self.properties, "Get") {
            var reader = DBusMessageReader(message: call)
            let interface = try reader.string()
            let name = try reader.string()
            guard interface == Self.interface, let value = propertyValues.first(where: { $0.key == name })?.value else {
                throw MethodFailure(name: DBusCallError.unknownProperty, text: "no property \(interface).\(name)")
            }
            return ([.variant(value)], nil)
        }
        if isCall(call, Self.properties, "Set") {
            throw MethodFailure(
                name: "org.freedesktop.DBus.Error.PropertyReadOnly", text: "the monitor's properties are read-only")
        }
        throw unknownMethod(call)
    }

    private func objectArgument(_ call: OpaquePointer) -> String {
        var reader = DBusMessageReader(message: call)
        return (try? reader.objectPath()) ?? "?"
    }

    private func unknownMethod(_ call: OpaquePointer) -> MethodFailure {
        let member = dbus_message_get_member(call).map { String(cString: $0) } ?? "?"
        let interface = dbus_message_get_interface(call).map { String(cString: $0) } ?? "?"
        return MethodFailure(name: DBusCallError.unknownMethod, text: "no method \(interface).\(member) here")
    }

    private var rootIntrospection: String {
        """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
          <interface name="\(Self.objectManager)">
            <method name="GetManagedObjects"><arg name="objects" type="a{oa{sa{sv}}}" direction="out"/></method>
          </interface>
          <interface name="\(Self.introspectable)">
            <method name="Introspect"><arg name="xml" type="s" direction="out"/></method>
          </interface>
          <node name="georacing"/>
        </node>
        """
    }

    private var monitorIntrospection: String {
        """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
          <interface name="\(Self.interface)">
            <method name="Release"/>
            <method name="Activate"/>
            <method name="DeviceFound"><arg name="device" type="o" direction="in"/></method>
            <method name="DeviceLost"><arg name="device" type="o" direction="in"/></method>
            <property name="Type" type="s" access="read"/>
            <property name="Patterns" type="a(yyay)" access="read"/>
            <property name="RSSISamplingPeriod" type="q" access="read"/>
          </interface>
          <interface name="\(Self.properties)">
            <method name="Get">
              <arg name="interface" type="s" direction="in"/><arg name="name" type="s" direction="in"/>
              <arg name="value" type="v" direction="out"/>
            </method>
            <method name="GetAll">
              <arg name="interface" type="s" direction="in"/><arg name="values" type="a{sv}" direction="out"/>
            </method>
          </interface>
          <interface name="\(Self.introspectable)">
            <method name="Introspect"><arg name="xml" type="s" direction="out"/></method>
          </interface>
        </node>
        """
    }
}

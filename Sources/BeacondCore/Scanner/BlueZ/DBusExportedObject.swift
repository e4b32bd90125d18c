import CBlueZ
import Glibc

/// An object beacond exports on its own D-Bus connection for bluetoothd to read: the scanner's
/// advertisement monitor and the transmitter's advertisement.
///
/// `path` implements one interface with read-only properties, plus Properties and
/// Introspectable; `root` implements ObjectManager, whose GetManagedObjects bluetoothd calls to
/// find it (`root` may be `path` itself). Calls to the interface's methods get an empty reply
/// and are handed back to the owner as a `Call`.
struct DBusExportedObject: Sendable {
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
    static let properties = "org.freedesktop.DBus.Properties"
    static let introspectable = "org.freedesktop.DBus.Introspectable"

    /// A method of the interface; `argument` is its one object-path argument's name, if any.
    struct Method: Sendable {
        var name: String
        var argument: String?
    }

    /// A call bluetoothd made to one of the interface's methods.
    struct Call: Equatable, Sendable {
        var member: String
        /// The object-path argument, "?" when it was missing.
        var object: String?
    }

    let root: String
    let path: String
    let interface: String
    let propertyValues: KeyValuePairs<String, DBusValue>
    let methods: [Method]

    /// GetManagedObjects' reply value, `a{oa{sa{sv}}}`.
    var managedObjects: DBusValue {
        .dictionary(
            key: "o", value: "a{sa{sv}}",
            [
                DBusDictEntry(
                    key: .objectPath(path),
                    value: .dictionary(
                        key: "s", value: "a{sv}",
                        [DBusDictEntry(key: .string(interface), value: .properties(propertyValues))]))
            ])
    }

    /// Answers `call` if it is addressed to this object's paths: the reply to send (nil for
    /// calls that want none) and the interface call it was. Nil when the message is not ours.
    func handle(_ call: OpaquePointer) -> (reply: DBusMessage?, call: Call?)? {
        guard dbus_message_get_type(call) == DBUS_MESSAGE_TYPE_METHOD_CALL,
            let rawPath = dbus_message_get_path(call)
        else { return nil }
        let isRoot = strcmp(rawPath, root) == 0
        let isObject = strcmp(rawPath, path) == 0
        guard isRoot || isObject else { return nil }
        let wantsReply = dbus_message_get_no_reply(call) == 0
        do {
            let (arguments, made) = try answer(call, isRoot: isRoot, isObject: isObject)
            let reply = try DBusMessage.methodReturn(to: call, arguments: arguments)
            return (wantsReply ? reply : nil, made)
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

    private func answer(_ call: OpaquePointer, isRoot: Bool, isObject: Bool) throws -> ([DBusValue], Call?) {
        if isCall(call, Self.introspectable, "Introspect") {
            return ([.string(isObject ? objectIntrospection(withObjectManager: isRoot) : rootIntrospection)], nil)
        }
        if isRoot, isCall(call, Self.objectManager, "GetManagedObjects") { return ([managedObjects], nil) }
        guard isObject else { throw unknownMethod(call) }
        if let method = methods.first(where: { isCall(call, interface, $0.name) }) {
            var object: String?
            if method.argument != nil {
                var reader = DBusMessageReader(message: call)
                object = (try? reader.objectPath()) ?? "?"
            }
            return ([], Call(member: method.name, object: object))
        }
        if isCall(call, Self.properties, "GetAll") {
            var reader = DBusMessageReader(message: call)
            let name = try reader.string()
            guard name == interface else {
                throw MethodFailure(
                    name: "org.freedesktop.DBus.Error.UnknownInterface", text: "no interface \(name) here")
            }
            return ([.properties(propertyValues)], nil)
        }
        if isCall(call, Self.properties, "Get") {
            var reader = DBusMessageReader(message: call)
            let name = try reader.string()
            let property = try reader.string()
            guard name == interface, let value = propertyValues.first(where: { $0.key == property })?.value else {
                throw MethodFailure(name: DBusCallError.unknownProperty, text: "no property \(name).\(property)")
            }
            return ([.variant(value)], nil)
        }
        if isCall(call, Self.properties, "Set") {
            throw MethodFailure(
                name: "org.freedesktop.DBus.Error.PropertyReadOnly", text: "the \(interface) properties are read-only")
        }
        throw unknownMethod(call)
    }

    private func unknownMethod(_ call: OpaquePointer) -> MethodFailure {
        let member = dbus_message_get_member(call).map { String(cString: $0) } ?? "?"
        let interface = dbus_message_get_interface(call).map { String(cString: $0) } ?? "?"
        return MethodFailure(name: DBusCallError.unknownMethod, text: "no method \(interface).\(member) here")
    }

    private static let doctype = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        """

    private var objectManagerXML: String {
        """
          <interface name="\(Self.objectManager)">
            <method name="GetManagedObjects"><arg name="objects" type="a{oa{sa{sv}}}" direction="out"/></method>
          </interface>

        """
    }

    private var introspectableXML: String {
        """
          <interface name="\(Self.introspectable)">
            <method name="Introspect"><arg name="xml" type="s" direction="out"/></method>
          </interface>

        """
    }

    private var rootIntrospection: String {
        let child = path.hasPrefix(root + "/") ? String(path.dropFirst(root.count + 1)) : path
        return Self.doctype + "\n<node>\n" + objectManagerXML + introspectableXML
            + "  <node name=\"\(child)\"/>\n</node>\n"
    }

    private func objectIntrospection(withObjectManager: Bool) -> String {
        var xml = Self.doctype + "\n<node>\n  <interface name=\"\(interface)\">\n"
        for method in methods {
            if let argument = method.argument {
                xml += "    <method name=\"\(method.name)\"><arg name=\"\(argument)\" type=\"o\" direction=\"in\"/>"
                xml += "</method>\n"
            } else {
                xml += "    <method name=\"\(method.name)\"/>\n"
            }
        }
        for (name, value) in propertyValues {
            xml += "    <property name=\"\(name)\" type=\"\(value.signature)\" access=\"read\"/>\n"
        }
        xml += "  </interface>\n"
        xml += """
              <interface name="\(Self.properties)">
                <method name="Get">
                  <arg name="interface" type="s" direction="in"/><arg name="name" type="s" direction="in"/>
                  <arg name="value" type="v" direction="out"/>
                </method>
                <method name="GetAll">
                  <arg name="interface" type="s" direction="in"/><arg name="values" type="a{sv}" direction="out"/>
                </method>
              </interface>

            """
        if withObjectManager { xml += objectManagerXML }
        return xml + introspectableXML + "</node>\n"
    }
}

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
    static let objectManager = DBusExportedObject.objectManager

    /// What bluetoothd told the monitor.
    enum Event: Equatable, Sendable {
        case activated
        case released
        case deviceFound(String)
        case deviceLost(String)
    }

    let object: DBusExportedObject
    var root: String { object.root }
    var path: String { object.path }

    init(root: String = defaultRoot, companyID: UInt16) {
        object = DBusExportedObject(
            root: root, path: root + "/georacing", interface: Self.interface,
            propertyValues: [
                "Type": .string("or_patterns"),
                "Patterns": .array(
                    element: "(yyay)",
                    [
                        .structure([
                            .byte(0), .byte(0xFF),
                            .bytes([UInt8(truncatingIfNeeded: companyID), UInt8(companyID >> 8)]),
                        ])
                    ]),
                "RSSISamplingPeriod": .uint16(0),
            ],
            methods: [
                .init(name: "Release"), .init(name: "Activate"), .init(name: "DeviceFound", argument: "device"),
                .init(name: "DeviceLost", argument: "device"),
            ])
    }

    /// Answers `call` if it is addressed to the monitor's objects: the reply to send (nil for
    /// calls that want none) and what it told us. Nil when the message is not ours.
    func handle(_ call: OpaquePointer) -> (reply: DBusMessage?, event: Event?)? {
        guard let (reply, made) = object.handle(call) else { return nil }
        let event: Event? =
            switch made?.member {
            case "Activate": .activated
            case "Release": .released
            case "DeviceFound": .deviceFound(made?.object ?? "?")
            case "DeviceLost": .deviceLost(made?.object ?? "?")
            default: nil
            }
        return (reply, event)
    }
}

/// One message of the kiosk's catalogues (`languages/*.yaml`, docs/kiosk.md, "Languages"): the
/// headlines, the status and detail lines, the evacuation view's lines and the spoken
/// announcements. The raw value is the key a catalogue file spells; `english` is the built-in
/// text, shown when a language lacks the key (and equal, word for word, to `languages/en.yaml`:
/// KioskCatalogueTests compares them).
///
/// `{name}` in a text is a placeholder the kiosk fills in; a translation has exactly the
/// placeholders of the English text.
package enum KioskPhrase: String, CaseIterable, Sendable, Hashable {
    case green
    case yellow
    case vsc
    case safetyCar = "safety_car"
    case red
    case evacuation
    case noSignal = "no_signal"
    case stale
    case daemonUnreachable = "daemon_unreachable"
    case pageUnreachable = "page_unreachable"
    case unreachableFor = "unreachable_for"
    case reconnecting
    case pageLost = "page_lost"
    case zone
    case zoneNamed = "zone_named"
    case wholeCircuit = "whole_circuit"
    case sourceBeacon = "source_beacon"
    case sourceBeaconSigned = "source_beacon_signed"
    case sourceRemote = "source_remote"
    case raceControlMessage = "race_control_message"
    case evacuationLatched = "evacuation_latched"
    case raceControlStale = "race_control_stale"
    case raceControlStaleAge = "race_control_stale_age"
    case showingFor = "showing_for"
    case nothingHeard = "nothing_heard"
    case scannerDown = "scanner_down"
    case replayFinished = "replay_finished"
    case noScanner = "no_scanner"
    case temperature
    case exit
    case exitDistance = "exit_distance"
    case route
    case followStewards = "follow_stewards"
    case sayZone = "say_zone"
    case sayZoneNamed = "say_zone_named"
    case sayExit = "say_exit"
    case sayExitDistance = "say_exit_distance"
    case sayFollowStewards = "say_follow_stewards"
    case sayGreen = "say_green"
    case sayYellow = "say_yellow"
    case sayVsc = "say_vsc"
    case saySafetyCar = "say_safety_car"
    case sayRed = "say_red"
    case sayEvacuation = "say_evacuation"
    case sayNoSignal = "say_no_signal"
    case sayUp = "say_up"
    case sayUpRight = "say_up_right"
    case sayRight = "say_right"
    case sayDownRight = "say_down_right"
    case sayDown = "say_down"
    case sayDownLeft = "say_down_left"
    case sayLeft = "say_left"
    case sayUpLeft = "say_up_left"

    /// The built-in English text.
    package var english: String {
        switch self {
        case .green: "GREEN"
        case .yellow: "YELLOW"
        case .vsc: "VSC"
        case .safetyCar: "SC"
        case .red: "RED FLAG"
        case .evacuation: "EVACUATE"
        case .noSignal: "NO SIGNAL"
        case .stale: "STALE"
        case .daemonUnreachable: "NO SIGNAL — daemon unreachable"
        case .pageUnreachable: "NO SIGNAL — kiosk server unreachable"
        case .unreachableFor: "No contact with beacond for {duration}"
        case .reconnecting: "Reconnecting…"
        case .pageLost: "The page lost its event stream from beacond kiosk"
        case .zone: "Zone {zone}"
        case .zoneNamed: "Zone {zone} — {name}"
        case .wholeCircuit: "Whole circuit"
        case .sourceBeacon: "Source: track beacon"
        case .sourceBeaconSigned: "Source: track beacon, signed"
        case .sourceRemote: "Source: race control"
        case .raceControlMessage: "Race control: {message}"
        case .evacuationLatched: "Evacuation latched by race control"
        case .raceControlStale: "Race control STALE"
        case .raceControlStaleAge: "Race control STALE — last update {age} ago"
        case .showingFor: "Showing for {duration}"
        case .nothingHeard: "No track beacon or race control state"
        case .scannerDown: "Bluetooth scanner down: no beacon can be heard"
        case .replayFinished: "Replay finished: the capture has no more beacons"
        case .noScanner: "No Bluetooth scanner running"
        case .temperature: "Temperature {celsius} °C"
        case .exit: "Exit: {name}"
        case .exitDistance: "Exit: {name} — {distance} m"
        case .route: "Route: {route}"
        case .followStewards: "Follow the stewards' instructions"
        case .sayZone: "Zone {zone}"
        case .sayZoneNamed: "Zone {zone}, {name}"
        case .sayExit: "Go to {name}."
        case .sayExitDistance: "Go to {name}, {distance} metres."
        case .sayFollowStewards: "Follow the stewards' instructions"
        case .sayGreen: "Green flag. Track clear."
        case .sayYellow: "Yellow flag. Slow down, no overtaking."
        case .sayVsc: "Virtual safety car."
        case .saySafetyCar: "Safety car."
        case .sayRed: "Red flag. The session is stopped."
        case .sayEvacuation: "Evacuation. Leave the area now."
        case .sayNoSignal: "No signal."
        case .sayUp: "Straight ahead."
        case .sayUpRight: "Ahead, on your right."
        case .sayRight: "To your right."
        case .sayDownRight: "Behind you, on your right."
        case .sayDown: "Behind you."
        case .sayDownLeft: "Behind you, on your left."
        case .sayLeft: "To your left."
        case .sayUpLeft: "Ahead, on your left."
        }
    }
}

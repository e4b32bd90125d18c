import CircuitState

/// What the hub emits, one value per happening. Outputs receive each event on the hub's event
/// loop, in the order the daemon connected them (`TrackStateHub.connect(_:)`).
package enum HubEvent {
    /// A new state: its number, the typed message, what it was made from and its protocol line.
    case published(Publication)
    /// A beacon was heard: its report, at most one per beacon per `TrackStateHub.beaconUpdateInterval`,
    /// and only while some output wants them (`HubOutput.wantsBeaconUpdates`).
    case beaconUpdate(BeaconUpdate)
    /// Race control's state was fetched; sent after the engine took it.
    case remoteFetched(RemoteSnapshot)
}

/// One beacon as heard: its key and its report (what was heard, and its override if one is active).
package struct BeaconUpdate {
    package let key: OverrideKey
    package let report: BeaconReport
}

/// A receiver of the hub's events: the socket server's fan-out, MQTT, systemd's status line,
/// the metrics. An output never calls the hub: what it needs comes in the events.
package protocol HubOutput: AnyObject {
    /// Whether this output wants `.beaconUpdate` events now. The hub asks at each input, and
    /// renders beacon reports only while one of its outputs says yes.
    var wantsBeaconUpdates: Bool { get }
    /// Called on the hub's event loop for every event, in the order the outputs were connected.
    func receive(_ event: HubEvent)
}

extension HubOutput {
    package var wantsBeaconUpdates: Bool { false }
}

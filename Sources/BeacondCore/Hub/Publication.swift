import CircuitState

/// One published change, as the hub emits it: the typed state message, what it was made from, and
/// its protocol line, rendered once for every observer (the socket's clients, MQTT).
package struct Publication {
    /// The publication number, also `message.seq`.
    package let seq: Int
    package let state: PublishedState
    package let message: StateMessage
    /// `message` as one protocol line, with its "\n".
    package let line: [UInt8]
    /// Beacons in the directory when it was published (systemd's status line counts them).
    package let beaconsHeard: Int

    init(seq: Int, state: PublishedState, message: StateMessage, beaconsHeard: Int) {
        self.seq = seq
        self.state = state
        self.message = message
        line = message.line
        self.beaconsHeard = beaconsHeard
    }
}

import NIOCore

/// At most one emission per key per `interval`, the one coalescer of beacond: the socket's beacon
/// updates (per beacon, 250 ms), MQTT's sightings (per beacon, 1 s) and systemd's status line (one
/// key, 1 s) all go through it.
///
/// A key's first offer goes out at once and opens its window. Offers within the window are held,
/// the latest replacing the one before, and the held one goes out when the window ends, opening
/// the next. An offer after the window goes out at once (dropping a held one whose emission is
/// late). Waits are tasks scheduled on the loop and time is the loop's clock, so an
/// `EmbeddedEventLoop` drives it in tests. Bounded: at most `maxKeys` keys are remembered; when
/// full, keys whose window has passed with nothing held are forgotten, and if none can be, the
/// offer is refused and the caller counts it. Used on its loop only.
final class KeyedCoalescer<Key: Hashable, Value> {
    enum Outcome: Equatable {
        /// Emitted now.
        case emitted
        /// Held, to be emitted when the key's window ends.
        case held
        /// `maxKeys` keys are in their window: not emitted, not held.
        case refused
    }

    /// `emit(key, value, atOnce)`: `atOnce` is false for a held value emitted at its window's end.
    typealias Emit = (_ key: Key, _ value: Value, _ atOnce: Bool) -> Void

    let interval: TimeAmount
    let maxKeys: Int
    private let eventLoop: any EventLoop
    private let emit: Emit

    private struct Window {
        var opened: NIODeadline
        var held: Value?
    }

    private var windows: [Key: Window] = [:]

    init(eventLoop: any EventLoop, interval: TimeAmount, maxKeys: Int = 4096, emit: @escaping Emit) {
        self.eventLoop = eventLoop
        self.interval = max(.nanoseconds(1), interval)
        self.maxKeys = max(1, maxKeys)
        self.emit = emit
    }

    /// Keys remembered now.
    var rememberedKeys: Int { windows.count }

    /// The values held now, waiting for their windows to end.
    var heldCount: Int { windows.values.count { $0.held != nil } }

    @discardableResult
    func offer(_ value: Value, for key: Key) -> Outcome {
        let now = eventLoop.now
        if let index = windows.index(forKey: key) {
            let window = windows.values[index]
            if now - window.opened >= interval {
                windows.values[index] = Window(opened: now, held: nil)
                emit(key, value, true)
                return .emitted
            }
            windows.values[index].held = value
            if window.held == nil { scheduleEnd(of: key, at: window.opened + interval) }
            return .held
        }
        if windows.count >= maxKeys {
            windows = windows.filter { now - $0.value.opened < interval || $0.value.held != nil }
            if windows.count >= maxKeys { return .refused }
        }
        windows[key] = Window(opened: now, held: nil)
        emit(key, value, true)
        return .emitted
    }

    private func scheduleEnd(of key: Key, at deadline: NIODeadline) {
        eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            self?.windowEnded(for: key)
        }
    }

    /// Emits `key`'s held value, if it still has one, and opens its next window.
    private func windowEnded(for key: Key) {
        guard let index = windows.index(forKey: key), let value = windows.values[index].held else { return }
        windows.values[index] = Window(opened: eventLoop.now, held: nil)
        emit(key, value, false)
    }
}

/// Drives a `FusionEngine` through time-ordered inputs, as `replay --timeline` and the
/// replay backend need it, and hands over every evaluation; `PublishedState.changed` tells
/// which ones changed (mode, source, zone).
///
/// Inputs that share a timestamp are applied together before the state is evaluated.
/// Expiries and staleness between inputs are evaluated at their own instants, and
/// `finish` keeps the clock running until nothing is pending.
public struct TimelineDriver: Sendable {
    public private(set) var engine: FusionEngine
    /// The timestamp of the inputs applied but not yet evaluated.
    private var pendingTime: Int64?

    public init(engine: FusionEngine) {
        self.engine = engine
    }

    /// Applies one input stamped `time`. `emit` receives the evaluations this makes due:
    /// of the previous timestamp's inputs, and of the deadlines before `time`, in time order.
    public mutating func input(
        at time: Int64, emit: (PublishedState) -> Void, _ apply: (inout FusionEngine) -> Void
    ) {
        if let pending = pendingTime, pending != time {
            flush(pending, emit: emit)
        }
        if pendingTime == nil {
            for state in engine.evaluateDeadlines(before: time) { emit(state) }
        }
        pendingTime = time
        apply(&engine)
    }

    /// Evaluates the inputs applied so far (live use: right after each input).
    public mutating func settle(emit: (PublishedState) -> Void) {
        if let pending = pendingTime { flush(pending, emit: emit) }
    }

    /// Evaluates pending inputs, then every deadline up to and including `time` (live use: a
    /// timer fired, or the clock was found past a deadline).
    public mutating func advance(through time: Int64, emit: (PublishedState) -> Void) {
        settle(emit: emit)
        for state in engine.evaluateDeadlines(before: time == .max ? .max : time + 1) { emit(state) }
    }

    /// Settles pending inputs and evaluates once more at `time` (no earlier than the engine's
    /// clock): for a publisher whose own fields changed, or the first publication.
    public mutating func reevaluate(at time: Int64, emit: (PublishedState) -> Void) {
        settle(emit: emit)
        emit(engine.evaluate(at: max(time, engine.clock)))
    }

    /// Changes the engine between inputs: reconfiguration, a fresh override table.
    public mutating func modifyEngine(_ change: (inout FusionEngine) -> Void) {
        change(&engine)
    }

    /// Evaluates the last inputs, then every pending expiry and staleness instant.
    public mutating func finish(emit: (PublishedState) -> Void) {
        if let pending = pendingTime { flush(pending, emit: emit) }
        pendingTime = nil
        for state in engine.evaluateDeadlines(before: .max) { emit(state) }
    }

    private mutating func flush(_ time: Int64, emit: (PublishedState) -> Void) {
        emit(engine.evaluate(at: time))
        pendingTime = nil
    }
}

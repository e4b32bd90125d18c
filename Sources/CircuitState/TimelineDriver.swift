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

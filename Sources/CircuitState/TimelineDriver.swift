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

    /// An evaluation with the engine as it stands right after it: a recorder that follows each
    /// override (`RaceRecorder`) reads the engine there, before the next input changes it.
    public typealias Observer = (PublishedState, FusionEngine) -> Void

    /// Applies one input stamped `time`. `emit` receives the evaluations this makes due:
    /// of the previous timestamp's inputs, and of the deadlines before `time`, in time order.
    public mutating func input(
        at time: Int64, emit: (PublishedState) -> Void, _ apply: (inout FusionEngine) -> Void
    ) {
        input(at: time, observe: { state, _ in emit(state) }, apply)
    }

    /// `input(at:emit:_:)`, with the engine beside each evaluation.
    public mutating func input(at time: Int64, observe: Observer, _ apply: (inout FusionEngine) -> Void) {
        if let pending = pendingTime, pending != time {
            flush(pending, observe: observe)
        }
        if pendingTime == nil {
            evaluateDeadlines(before: time, observe: observe)
        }
        pendingTime = time
        apply(&engine)
    }

    /// Evaluates the inputs applied so far (live use: right after each input).
    public mutating func settle(emit: (PublishedState) -> Void) {
        settle(observe: { state, _ in emit(state) })
    }

    public mutating func settle(observe: Observer) {
        if let pending = pendingTime { flush(pending, observe: observe) }
    }

    /// Evaluates pending inputs, then every deadline up to and including `time` (live use: a
    /// timer fired, or the clock was found past a deadline).
    public mutating func advance(through time: Int64, emit: (PublishedState) -> Void) {
        advance(through: time, observe: { state, _ in emit(state) })
    }

    public mutating func advance(through time: Int64, observe: Observer) {
        settle(observe: observe)
        evaluateDeadlines(before: time == .max ? .max : time + 1, observe: observe)
    }

    /// Settles pending inputs and evaluates once more at `time` (no earlier than the engine's
    /// clock): for a publisher whose own fields changed, or the first publication.
    public mutating func reevaluate(at time: Int64, emit: (PublishedState) -> Void) {
        reevaluate(at: time, observe: { state, _ in emit(state) })
    }

    public mutating func reevaluate(at time: Int64, observe: Observer) {
        settle(observe: observe)
        let state = engine.evaluate(at: max(time, engine.clock))
        observe(state, engine)
    }

    /// Changes the engine between inputs: reconfiguration, a fresh override table.
    public mutating func modifyEngine(_ change: (inout FusionEngine) -> Void) {
        change(&engine)
    }

    /// Evaluates the last inputs, then every pending expiry and staleness instant.
    public mutating func finish(emit: (PublishedState) -> Void) {
        finish(observe: { state, _ in emit(state) })
    }

    public mutating func finish(observe: Observer) {
        if let pending = pendingTime { flush(pending, observe: observe) }
        pendingTime = nil
        evaluateDeadlines(before: .max, observe: observe)
    }

    private mutating func flush(_ time: Int64, observe: Observer) {
        let state = engine.evaluate(at: time)
        pendingTime = nil
        observe(state, engine)
    }

    /// `FusionEngine.evaluateDeadlines(before:)`, one deadline at a time, so that each evaluation
    /// is observed with the engine as it stood then.
    private mutating func evaluateDeadlines(before time: Int64, observe: Observer) {
        while let deadline = engine.nextDeadline(after: engine.clock), deadline < time {
            let state = engine.evaluate(at: deadline)
            observe(state, engine)
        }
    }
}

extension TimelineDriver {
    /// The engine's next deadline after its clock (`FusionEngine.nextDeadline(after:)`), read in
    /// place: a caller outside this module reading `engine` gets a copy of the whole engine first.
    public var nextDeadline: Int64? { engine.nextDeadline(after: engine.clock) }
}

/// The fields of one successful `GET /api/state` response, parsed at the edge.
/// An empty object `{}` is a snapshot with every field nil.
public struct RemoteSnapshot: Hashable, Sendable {
    public var id: String?
    public var globalMode: String?
    public var mode: String?
    public var message: String?
    /// The route out, in race control's words, during an evacuation (`evacuation_route`).
    public var evacuationRoute: String?
    public var temperature: Double?
    public var humidity: Double?
    public var wind: String?
    public var forecast: String?
    public var lastUpdated: String?

    public init(
        id: String? = nil, globalMode: String? = nil, mode: String? = nil, message: String? = nil,
        temperature: Double? = nil, humidity: Double? = nil, wind: String? = nil, forecast: String? = nil,
        lastUpdated: String? = nil, evacuationRoute: String? = nil
    ) {
        self.id = id
        self.globalMode = globalMode
        self.mode = mode
        self.message = message
        self.temperature = temperature
        self.humidity = humidity
        self.wind = wind
        self.forecast = forecast
        self.lastUpdated = lastUpdated
        self.evacuationRoute = evacuationRoute
    }

    /// The mode `globalMode` names, else the mode `mode` names (`TrackMode(remoteName:)`); nil when
    /// neither names one. A `globalMode` that names nothing beacond knows falls back to `mode`.
    public var trackMode: TrackMode? {
        globalMode.flatMap(TrackMode.init(remoteName:)) ?? mode.flatMap(TrackMode.init(remoteName:))
    }
}

/// The `[notifications]` section: how often a content-available trigger may refresh feeds.
public struct NotificationSettings: Sendable, Equatable {
    /// The shortest time between two feed refreshes (`throttle`), default 24 h.
    public var throttle: Duration
    /// Whether to ignore ``throttle``, for development (`dont_throttle`), default `false`.
    public var dontThrottle: Bool

    /// Creates notification settings; the defaults are those of an absent section.
    public init(throttle: Duration = .seconds(86_400), dontThrottle: Bool = false) {
        self.throttle = throttle
        self.dontThrottle = dontThrottle
    }
}

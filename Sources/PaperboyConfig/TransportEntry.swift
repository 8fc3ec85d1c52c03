/// A `[[transports]]` entry: an out-of-process transport for a URL scheme.
public struct TransportEntry: Sendable, Equatable {
    /// The URL scheme it serves, lowercased (`scheme`).
    public var scheme: String
    /// The executable and its arguments (`command`).
    ///
    /// An executable written with a `/` but not absolute is resolved against the
    /// configuration's folder; a bare name is looked up in `PATH` when run.
    public var command: [String]
    /// Default transport options for assets of this scheme (`options`); an asset's own win.
    public var options: [String: String]
    /// How long a helper that finished a transfer is kept for the next one to the same origin
    /// (`keep_alive`), default 30 s.
    public var keepAlive: Duration
    /// Whether the helper fetches one range when asked (`ranges`, default false): its `HELLO`
    /// lists the `ranges` capability, and indexed assets fetch only their missing chunks.
    public var ranges = false
    /// The line of the `[[transports]]` header, if known.
    public var line: Int?

    /// Creates a transport entry (``ranges`` false).
    public init(scheme: String, command: [String], options: [String: String] = [:], keepAlive: Duration = .seconds(30),
                line: Int? = nil) {
        self.scheme = scheme
        self.command = command
        self.options = options
        self.keepAlive = keepAlive
        self.line = line
    }
}

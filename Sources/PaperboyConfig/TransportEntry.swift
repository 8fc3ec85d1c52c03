/// A `[[transports]]` entry: an out-of-process transport for a URL scheme.
public struct TransportEntry: Sendable, Equatable {
    /// The URL scheme it serves, lowercased (`scheme`).
    public var scheme: String
    /// The executable and its arguments (`command`).
    ///
    /// An executable written with a `/` but not absolute is resolved against the
    /// configuration's folder; a bare name is looked up in `PATH` when run.
    public var command: [String]
    /// The line of the `[[transports]]` header, if known.
    public var line: Int?

    /// Creates a transport entry.
    public init(scheme: String, command: [String], line: Int? = nil) {
        self.scheme = scheme
        self.command = command
        self.line = line
    }
}

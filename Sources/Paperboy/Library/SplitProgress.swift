import Foundation

/// How one asset is downloading over several connections or from mirrors, while it does
/// (``AssetStatus/split``): its pieces, and each source's bytes and connections.
///
/// Reported by transports that split a resource (``TransportCapabilities/segments``: HTTP with
/// `connections_per_asset` above 1, with or without mirrors), read when asked for: it costs
/// nothing while nobody looks.
public struct SplitProgress: Sendable, Hashable, Codable {
    /// One URL pieces are asked of.
    public struct Source: Sendable, Hashable, Codable {
        /// The URL, without user or password: the asset's URL first, then its mirrors in order.
        public var url: URL
        /// Bytes of the file written from it in this attempt.
        public var bytes: Int64
        /// Requests to it running now.
        public var connections: Int
        /// Whether it was dropped for this attempt (it stalled, failed, or served another
        /// version): nothing more is asked of it; the bytes it sent are kept.
        public var isDemoted: Bool

        /// Creates a source's figures.
        public init(url: URL, bytes: Int64, connections: Int, isDemoted: Bool) {
            self.url = url
            self.bytes = bytes
            self.connections = connections
            self.isDemoted = isDemoted
        }
    }

    /// The pieces the file is cut into now (a piece halved for an idle connection counts twice).
    public var pieces: Int
    /// The pieces written whole.
    public var piecesDone: Int
    /// Every source, the asset's URL first.
    public var sources: [Source]

    /// Creates the figures of a split download.
    public init(pieces: Int, piecesDone: Int, sources: [Source]) {
        self.pieces = pieces
        self.piecesDone = piecesDone
        self.sources = sources
    }

    /// Requests running now, on every source.
    public var connections: Int { sources.reduce(0) { $0 + $1.connections } }
}

/// A sink that shows how a split download goes (the library's own): the transport hands it a
/// way to read the figures, `nil` when the transfer ends.
package protocol SplitReportingSink: TransferSink {
    /// `progress` reads the figures when someone asks (from any thread, cheaply); `nil` stops.
    func reportSplit(_ progress: (@Sendable () -> SplitProgress?)?)
}

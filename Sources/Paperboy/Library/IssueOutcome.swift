/// How an issue's downloads ended, as ``Issue/waitUntilAvailable()`` reports it.
public enum IssueOutcome: Sendable, Equatable {
    /// Every asset was delivered; the issue is marked new and its cover recorded.
    case available
    /// Some assets were not delivered: each with how it ended (never `.delivered`). Empty for
    /// an issue without assets.
    case incomplete([AssetDownload: AssetOutcome])
}

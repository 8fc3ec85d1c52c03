/// The `[hooks]` section: commands run when something happens.
public struct HookSettings: Sendable, Equatable {
    /// The command and arguments run when an issue becomes available (`on_issue_available`);
    /// `nil` (the default) runs nothing.
    public var onIssueAvailable: [String]?
    /// How long one run of a hook may take (`timeout`), default 10 min; past it the hook's
    /// process group gets SIGTERM, then SIGKILL after a grace of at most 5 s.
    public var timeout: Duration

    /// Creates hook settings.
    public init(onIssueAvailable: [String]? = nil, timeout: Duration = .seconds(600)) {
        self.onIssueAvailable = onIssueAvailable
        self.timeout = timeout
    }
}

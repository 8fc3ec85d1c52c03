/// The `[hooks]` section: commands run when something happens.
public struct HookSettings: Sendable, Equatable {
    /// The command and arguments run when an issue becomes available (`on_issue_available`);
    /// `nil` (the default) runs nothing.
    public var onIssueAvailable: [String]?

    /// Creates hook settings.
    public init(onIssueAvailable: [String]? = nil) {
        self.onIssueAvailable = onIssueAvailable
    }
}

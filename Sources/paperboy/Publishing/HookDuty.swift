import Foundation
import Logging
import Paperboy
import PaperboyConfig

/// The daemon's `[hooks] on_issue_available`: run once for each issue that becomes available
/// while the daemon serves the library, whatever made it available (a feed's schedule, a
/// `NOTIFY`, an app, `paperboy sync` or `add` through the daemon, which leave the hook to it).
///
/// Hooks run one at a time, in the order issues became available, on a thread of their own
/// (``IssueHook``); a failing or slow hook is logged and never holds the downloads. The hook
/// in force is the configuration's at the time the issue became available (SIGHUP may change it).
final class HookDuty: Sendable {
    private let task: Task<Void, Never>

    /// Starts following `library`'s events; `config` gives the configuration in force.
    init(library: Library, logger: Logger, config: @escaping @Sendable () -> PaperboyConfiguration) {
        // Subscribed here, before this returns, so that no completion is missed; a library
        // served by a daemon runs its hooks there.
        let events = library.local?.events { event in
            if case .issueDownloadCompleted = event { true } else { false }
        } ?? AsyncStream { $0.finish() }
        task = Task {
            for await event in events {
                guard case .issueDownloadCompleted(let issue) = event else { continue }
                guard let hook = IssueHook(config: config()) else { continue }
                let job = IssueHook.Job(issue: issue, badge: library.badgeCount)
                logger.info("issue \(issue.name) is available; running [hooks] on_issue_available")
                for failure in await hook.run([job]) { logger.error("\(failure)") }
            }
        }
    }

    /// Stops following the library (a hook running now finishes on its thread).
    func stop() {
        task.cancel()
    }
}

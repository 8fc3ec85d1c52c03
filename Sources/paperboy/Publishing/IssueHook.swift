import Foundation
import Paperboy
import PaperboyConfig

/// The `[hooks] on_issue_available` command, run once for each issue that became available:
/// the Linux analog of setNewsstandIconImage and the badge.
///
/// The command runs without a shell, in the configuration's folder, with the tool's standard
/// output and error, and with `PAPERBOY_ISSUE` (the name), `PAPERBOY_ISSUE_PATH` (the content
/// folder), `PAPERBOY_COVER` (the cover file, empty when there is none), `PAPERBOY_ISSUE_DATE`
/// and `PAPERBOY_BADGE` (new issues) in its environment; the variables named by `*_env` keys
/// (secrets) are removed from it.
///
/// A run is bounded by `[hooks] timeout` (10 minutes by default: ample for a hook that copies an
/// issue to a reader over USB or renders a cover, short enough that a hook waiting on something
/// that never comes cannot hold a timer-started `sync` for hours). Past it, the hook's process
/// group (Foundation starts each child in a group of its own) gets SIGTERM, then SIGKILL after a
/// grace of a tenth of the timeout, between 0.1 and 5 s.
struct IssueHook {
    /// What the hook is told about one issue (read while the library is open).
    struct Job: Sendable {
        var issue: String
        var environment: [String: String]

        init(issue: Issue, badge: Int) {
            self.init(name: issue.name, contentPath: issue.contentURL.path, coverPath: issue.coverURL?.path, date: issue.date, badge: badge)
        }

        init(name: String, contentPath: String, coverPath: String?, date: Date, badge: Int) {
            issue = name
            environment = [
                "PAPERBOY_ISSUE": name,
                "PAPERBOY_ISSUE_PATH": contentPath,
                "PAPERBOY_COVER": coverPath ?? "",
                "PAPERBOY_ISSUE_DATE": date.utcDayText,
                "PAPERBOY_BADGE": String(badge),
            ]
        }
    }

    let command: [String]
    let folder: URL
    let timeout: Duration
    /// This process's environment without the variables that hold secrets.
    let environment: [String: String]

    /// The configured hook, or `nil` when there is none.
    init?(config: PaperboyConfiguration) {
        guard let command = config.hooks.onIssueAvailable, !command.isEmpty else { return nil }
        self.command = command
        folder = config.fileURL.deletingLastPathComponent()
        timeout = config.hooks.timeout
        environment = config.childEnvironment()
    }

    /// Runs the hook for each job in turn (on a thread of its own, never the cooperative pool).
    ///
    /// - Returns: one message per hook that could not run or exited with a non-zero status.
    func run(_ jobs: [Job]) async -> [String] {
        guard !jobs.isEmpty else { return [] }
        let command = self.command
        let folder = self.folder
        let environment = self.environment
        let timeout = self.timeout
        return await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(returning: jobs.compactMap {
                    Self.runBlocking(command, folder: folder, environment: environment, timeout: timeout, job: $0)
                })
            }.start()
        }
    }

    private static func runBlocking(_ command: [String], folder: URL, environment: [String: String], timeout: Duration,
                                    job: Job) -> String? {
        var arguments = command
        let executable = arguments.removeFirst()
        let run = ChildRun(executable, arguments, environment: environment.merging(job.environment) { _, new in new },
                           folder: folder, timeout: timeout, inheritsOutput: true)
        let shown = command.joined(separator: " ")
        switch run.run().ending {
        case .exited(0):
            return nil
        case .exited(let status):
            return "hook '\(shown)' for issue '\(job.issue)' exited with status \(status); the issue stays available"
        case .signalled(let signal):
            return "hook '\(shown)' for issue '\(job.issue)' was killed by signal \(signal); the issue stays available"
        case .timedOut:
            return "hook '\(shown)' for issue '\(job.issue)' did not finish within \(DurationParser.string(for: timeout)) "
                + "([hooks] timeout) and was stopped; the issue stays available"
        case .couldNotStart(let reason):
            return "hook '\(shown)' for issue '\(job.issue)' could not start: \(reason)"
        }
    }
}

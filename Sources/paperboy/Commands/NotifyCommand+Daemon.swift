import ArgumentParser
import Foundation
import Paperboy
import PaperboyWire
import PaperboyConfig
import PaperboyDaemon

extension NotifyCommand {
    /// Sends the trigger to the daemon serving the library, if one answers (``DaemonRoute``);
    /// returns `false` when none does (the caller then works in-process).
    ///
    /// The daemon applies its throttle (kept in the library, shared with in-process runs),
    /// refreshes the feeds and starts the new issues' downloads; this returns once the catalogs
    /// are read.
    func notifyThroughDaemon(_ config: PaperboyConfiguration, payload: JSONValue?) async throws -> Bool {
        guard let client = try await DaemonRoute.connect(config, options: options) else { return false }
        defer { client.disconnect() }
        let reply: NotifyReply
        do {
            reply = try await client.notify(payload: payload, feed: nil)
        } catch {
            Console.error("paperboy: \(error.message)")
            throw ExitCode(1)
        }
        switch reply.result {
        case .ignored:
            tellNothingDone(.ignored)
        case .throttled:
            tellNothingDone(.throttled(nextAllowed: reply.nextAllowed ?? Date()))
        case .refreshed:
            let failures = reply.failures ?? []
            for failure in failures { Console.error("paperboy: \(failure)") }
            if !options.quiet {
                let added = reply.newIssues ?? []
                let list = added.isEmpty ? "" : ": " + added.joined(separator: ", ")
                Console.line("paperboy: content available; the daemon refreshed \(reply.feeds?.count ?? 0) feed(s), \(added.count) new issue(s)\(list); it downloads them")
            }
            if !failures.isEmpty { throw ExitCode(1) }
        }
        return true
    }
}

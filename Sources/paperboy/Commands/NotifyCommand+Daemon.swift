import ArgumentParser
import Foundation
import Paperboy
import PaperboyConfig
import PaperboyDaemon

extension NotifyCommand {
    /// Sends the trigger to the daemon serving the library, if one answers; returns `false`
    /// when none does (the caller then works in-process).
    ///
    /// The daemon applies the throttle (kept in the library, shared with in-process runs),
    /// refreshes the feeds and starts the new issues' downloads; this returns once the catalogs
    /// are read.
    func notifyThroughDaemon(_ config: PaperboyConfiguration, payload: JSONValue?) throws -> Bool {
        let found: DaemonRoute?
        do {
            found = try DaemonRoute.connect(config, client: "paperboy notify")
        } catch {
            Console.error("paperboy: \(error)")
            throw ExitCode(1)
        }
        guard var route = found else { return false }
        defer { route.close() }
        if options.verbose { Console.error("paperboy: using the daemon at \(route.socket.path)") }
        let reply: NotifyReply
        do {
            reply = try route.request(DaemonProtocol.Kind.notify, { NotifyRequest(id: $0, payload: payload) }, reply: NotifyReply.self)
        } catch let error as LibraryError {
            Console.error("paperboy: \(error.message)")
            throw ExitCode(1)
        }
        switch reply.result {
        case .ignored:
            if !options.quiet { Console.line("paperboy: the payload does not say content-available: 1; nothing to do") }
        case .throttled:
            if !options.quiet {
                let next = reply.nextAllowed ?? Date()
                let wait = ProgressDisplay.duration(max(0, next.timeIntervalSinceNow))
                Console.line("paperboy: throttled; the next refresh is allowed at \(next.utcTimeText) (in \(wait)); set [notifications] dont_throttle to lift it")
            }
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

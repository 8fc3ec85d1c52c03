import ArgumentParser
import Foundation
import Paperboy
import PaperboyConfig

/// `paperboy notify`: a content-available trigger; refreshes the feeds and syncs, at most once
/// per `[notifications] throttle` unless `dont_throttle`.
struct NotifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify",
        abstract: "Trigger a feed refresh and sync, as a push with content-available does.",
        discussion: """
            The trigger is throttled to once per [notifications] throttle (24h by default; the time of \
            the last refresh is kept in the library, so it survives restarts) unless dont_throttle is \
            set. A throttled or ignored trigger exits with 0 and says why; a refresh exits like sync, \
            in process or through the daemon serving the library (which also refreshes its own feeds).
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: ArgumentHelp(
        "The push payload as JSON ('-' reads standard input); it triggers when it says \"content-available\": 1, at the top level or under \"aps\". Without it, the trigger is unconditional.",
        valueName: "json"))
    var payload: String?

    @Flag(help: "Wait for an allowed network instead of exiting with 75 when assets wait for one.")
    var wait = false

    func validate() throws {
        if let payload, payload != "-" {
            do {
                _ = try parsePayload(Data(payload.utf8))
            } catch {
                throw ValidationError("--payload: \(error)")
            }
        }
    }

    /// The payload through the push payload's door (``Library/contentAvailable(payload:throttle:dontThrottle:now:)``'s limits).
    func parsePayload(_ data: Data) throws -> JSONValue {
        do {
            return try JSONReader.pushPayload.decode(JSONValue.self, from: data)
        } catch let error as JSONInputError {
            throw error
        } catch {
            throw JSONInputError(door: JSONReader.pushPayload.door, kind: .syntax, problem: "not a JSON value", offset: nil)
        }
    }

    func run() async throws {
        options.bootstrapLogging()
        let config = try options.loadConfiguration()
        var json: JSONValue?
        if let payload {
            do {
                // Standard input is read up to the door's size, never to its end.
                let data = payload == "-" ? try JSONReader.pushPayload.read(from: FileHandle.standardInput) : Data(payload.utf8)
                json = try parsePayload(data)
            } catch {
                Console.error("paperboy: \(error)")
                throw ExitCode(2)
            }
        }
        let opened = try await DaemonRoute.open(config, options: options)
        let library = opened.library
        let decision: ContentAvailableResult
        do {
            decision = try await library.contentAvailable(
                payload: json, throttle: config.notifications.throttle, dontThrottle: config.notifications.dontThrottle)
        } catch {
            await library.close()
            Console.error("paperboy: \(error.message)")
            throw ExitCode(1)
        }
        switch decision {
        case .ignored, .throttled:
            await library.close()
            tellNothingDone(decision)
        case .refresh:
            if !options.quiet { Console.line("paperboy: content available; refreshing \(config.feeds.count) feed(s)") }
            var run = SyncRun(options: options, config: config, opened: opened)
            run.wait = wait
            let code = await run.perform()
            if code != 0 { throw ExitCode(code) }
        }
    }

    func tellNothingDone(_ decision: ContentAvailableResult) {
        guard !options.quiet else { return }
        switch decision {
        case .ignored:
            Console.line("paperboy: the payload does not say content-available: 1; nothing to do")
        case .throttled(let next):
            let wait = ProgressDisplay.duration(max(0, next.timeIntervalSinceNow))
            Console.line("paperboy: throttled; the next refresh is allowed at \(next.utcTimeText) (in \(wait)); set [notifications] dont_throttle to lift it")
        case .refresh:
            break
        }
    }
}

import Foundation
import Logging
import Paperboy
import PaperboyWire
import PaperboyConfig
import PaperboyDaemon

/// The daemon's feeds: refreshed on their `refresh` schedule and on `NOTIFY`, one refresh at a
/// time, through the same code as `paperboy sync` (``FeedRefresh``, then ``SyncPlan``); the new
/// assets start in the daemon.
///
/// One timer waits for the earliest due feed (at most an hour at a time, so that a changed
/// wall clock is noticed); nothing polls. The schedule is written to ``FeedSchedule/fileName``
/// after every change. Dates and the timer's sleep come from one clock, so that a test with a
/// `TestClock` sees the timer as a sleeper and moves time to the refresh.
actor FeedDuty {
    /// The longest the timer sleeps before looking at the wall clock again.
    static let longestSleep: TimeInterval = 3600

    private let library: Library
    private let logger: Logger
    private let clock: any LibraryClock
    private let random: @Sendable () -> Double
    private let file: URL
    private var config: PaperboyConfiguration
    private var schedule = FeedSchedule()
    private var timer: Task<Void, Never>?
    private var stopped = false

    /// - Parameters:
    ///   - clock: the dates the schedule is computed from, and the timer's sleep.
    ///   - random: a number in 0...1 for each feed's jitter (``FeedSchedule``).
    init(library: Library, config: PaperboyConfiguration, logger: Logger, clock: any LibraryClock = SystemClock(),
         random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        self.library = library
        self.config = config
        self.logger = logger
        self.clock = clock
        self.random = random
        file = library.root.appendingPathComponent(FeedSchedule.fileName)
    }

    /// Reads the schedule kept by an earlier run (an unreadable one is set aside as
    /// `feed-schedule.json.corrupt` and the schedule recomputed) and arms the timer.
    func begin() {
        let (loaded, problem) = FeedSchedule.load(from: file)
        if let problem {
            let aside = file.appendingPathExtension("corrupt")
            unlink(aside.path)
            rename(file.path, aside.path)
            logger.warning("\(file.path): \(problem); set aside as \(aside.lastPathComponent), feed schedule recomputed")
        }
        schedule = loaded
        reschedule(config.feeds)
    }

    /// Applies a reloaded configuration: new feeds are scheduled, removed ones forgotten.
    func reconfigure(_ fresh: PaperboyConfiguration) {
        config = fresh
        reschedule(fresh.feeds)
    }

    /// Stops the timer; a refresh under way finishes.
    func stop() {
        stopped = true
        timer?.cancel()
        timer = nil
    }

    /// Answers `NOTIFY`: a content-available trigger, throttled like `paperboy notify`, that
    /// refreshes `request.feed` (or every feed) now.
    func notify(_ request: NotifyRequest) async throws -> NotifyReply {
        var feeds = config.feeds
        if let name = request.feed {
            feeds = feeds.filter { $0.name == name }
            guard !feeds.isEmpty else {
                throw WireError(DaemonProtocol.ErrorCode.feedNotFound,
                                "NOTIFY: no feed named '\(name)' (feeds: \(config.feeds.map(\.name).joined(separator: ", ")))")
            }
        }
        let decision = try await library.contentAvailable(
            payload: request.payload, throttle: config.notifications.throttle, dontThrottle: config.notifications.dontThrottle)
        switch decision {
        case .ignored:
            return NotifyReply(id: request.id, result: .ignored)
        case .throttled(let next):
            logger.notice("content-available: throttled until \(next.utcTimeText)")
            var reply = NotifyReply(id: request.id, result: .throttled)
            reply.nextAllowed = next
            return reply
        case .refresh:
            logger.notice("content-available: refreshing \(feeds.count) feed(s)")
            let (added, failures) = await refresh(feeds)
            var reply = NotifyReply(id: request.id, result: .refreshed)
            reply.feeds = feeds.map(\.name)
            reply.newIssues = added
            reply.failures = failures
            return reply
        }
    }

    // MARK: The timer

    private func reschedule(_ feeds: [FeedEntry]) {
        schedule.reconcile(with: feeds, now: clock.now, random: random)
        persist()
        for (name, due) in schedule.next.sorted(by: { $0.value < $1.value }) {
            logger.notice("feed '\(name)': next refresh at \(due.utcTimeText)")
        }
        arm()
    }

    private func arm() {
        timer?.cancel()
        guard !stopped, let earliest = schedule.earliest else {
            timer = nil
            return
        }
        let wait = min(max(earliest.timeIntervalSince(clock.now), 0), Self.longestSleep)
        logger.info("feeds: the timer wakes at \(clock.now.addingTimeInterval(wait).utcTimeText)")
        let clock = self.clock
        timer = Task { [weak self] in
            guard (try? await clock.sleep(seconds: wait)) != nil, !Task.isCancelled else { return }
            await self?.fire()
        }
    }

    private func fire() async {
        let due = Set(schedule.due(at: clock.now))
        let feeds = config.feeds.filter { due.contains($0.name) }
        if !feeds.isEmpty {
            logger.notice("refreshing \(feeds.count) feed(s) on schedule: \(feeds.map(\.name).joined(separator: ", "))")
            _ = await refresh(feeds)
        }
        arm()
    }

    // MARK: Refreshing

    /// Fetches `feeds`, adds their new issues and assets, starts what is not delivered, and
    /// sets each feed's next refresh. Returns the new issues' names and the problems.
    private func refresh(_ feeds: [FeedEntry]) async -> (added: [String], failures: [String]) {
        var scoped = config
        scoped.feeds = feeds
        let result = await FeedRefresh.refresh(config: scoped, library: library, logger: logger)
        var failures = result.failures
        var added: [String] = []
        // The plan starts what it adds or finds undelivered.
        var plan = SyncPlan()
        for item in result.issues {
            do {
                let isNew = try await library.issue(named: item.entry.name) == nil
                try await plan.add(item.entry, config: config, library: library)
                if isNew { added.append(item.entry.name) }
            } catch {
                failures.append("feed '\(item.feed)': issue '\(item.entry.name)': \(error.message)")
            }
        }
        for failure in failures { logger.error("\(failure)") }
        let now = clock.now
        for feed in feeds {
            schedule.refreshed(feed, now: now, random: random())
            if let next = schedule.next[feed.name] { logger.notice("feed '\(feed.name)': next refresh at \(next.utcTimeText)") }
        }
        persist()
        return (added, failures)
    }

    private func persist() {
        do {
            try schedule.save(to: file)
        } catch {
            // The error names the file and the reason (``AtomicFile``).
            logger.error("\(error); the feed schedule is kept in memory only")
        }
    }
}

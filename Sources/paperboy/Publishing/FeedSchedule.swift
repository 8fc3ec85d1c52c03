import Foundation
import Paperboy
import PaperboyConfig

/// When each `[[feeds]]` entry with a `refresh` is due next, kept in `feed-schedule.json` in
/// the library folder so that a restarted daemon neither refreshes every feed at once nor
/// forgets one that came due while it was stopped.
///
/// Times are wall-clock dates (the file outlives boots). Each refresh sets the next one
/// `refresh` later, minus up to 10 % at random, so feeds that start together drift apart and a
/// feed is never refreshed less often than its `refresh` says. A feed with no recorded time (new,
/// or the file was lost or unreadable) is due after a random delay of up to 10 % of its
/// `refresh`, at most ``firstSpread``: a daemon starting with many feeds does not fetch them all
/// in the same second.
struct FeedSchedule: Equatable {
    /// The longest wait before a feed with no recorded time is first refreshed.
    static let firstSpread: TimeInterval = 60
    /// The file's name in the library folder.
    static let fileName = "feed-schedule.json"

    /// The next refresh of each scheduled feed, by name.
    var next: [String: Date] = [:]

    private struct File: Codable {
        var version: Int
        var feeds: [String: Entry]

        struct Entry: Codable {
            var nextRefresh: Date
        }
    }

    /// Reads `file`; an absent file is an empty schedule, an unreadable one too, with the reason.
    static func load(from file: URL) -> (schedule: FeedSchedule, problem: String?) {
        let reader = JSONReader("feed schedule \(file.path)", limits: .stateFile)
        let data: Data
        do {
            guard let contents = try reader.contents(of: file) else { return (FeedSchedule(), nil) }
            data = contents
        } catch let error as JSONInputError {
            return (FeedSchedule(), error.problem)
        } catch {
            return (FeedSchedule(), nil)
        }
        do {
            let decoded = try reader.decode(File.self, from: data, using: JSONCoding.feedSchedule.decoder)
            guard decoded.version == 1 else { return (FeedSchedule(), "version \(decoded.version) is not 1") }
            return (FeedSchedule(next: decoded.feeds.mapValues(\.nextRefresh)), nil)
        } catch let error as JSONInputError where error.kind != .syntax {
            return (FeedSchedule(), error.problem)
        } catch {
            return (FeedSchedule(), "not a feed schedule (\(data.count) bytes)")
        }
    }

    /// Writes the schedule atomically and durably, private to the user (``AtomicFile``).
    func save(to file: URL) throws {
        let contents = File(version: 1, feeds: next.mapValues { File.Entry(nextRefresh: $0) })
        try AtomicFile.write(try JSONCoding.feedSchedule.encoder.encode(contents), to: file)
    }

    /// Keeps the feeds of `feeds` that have a `refresh`: drops the others, gives new ones their
    /// first time, and brings forward a time further away than its feed's `refresh` (a shorter
    /// one in a reloaded configuration).
    mutating func reconcile(with feeds: [FeedEntry], now: Date, random: () -> Double) {
        var kept: [String: Date] = [:]
        for feed in feeds {
            guard let refresh = feed.refresh?.secondsValue else { continue }
            if let due = next[feed.name], due <= now + refresh {
                kept[feed.name] = due
            } else if next[feed.name] != nil {
                kept[feed.name] = now + Self.jittered(refresh, random())
            } else {
                kept[feed.name] = now + min(refresh * 0.1, Self.firstSpread) * random()
            }
        }
        next = kept
    }

    /// Records a refresh of `feed` at `now`: its next one is `refresh` later, minus up to 10 %.
    mutating func refreshed(_ feed: FeedEntry, now: Date, random: Double) {
        guard let refresh = feed.refresh?.secondsValue else {
            next[feed.name] = nil
            return
        }
        next[feed.name] = now + Self.jittered(refresh, random)
    }

    /// The feeds due at `now`, earliest first.
    func due(at now: Date) -> [String] {
        next.filter { $0.value <= now }.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.map(\.key)
    }

    /// The earliest next refresh.
    var earliest: Date? { next.values.min() }

    /// `refresh` minus `random` (0…1) × 10 %.
    static func jittered(_ refresh: TimeInterval, _ random: Double) -> TimeInterval {
        refresh * (1 - 0.1 * min(max(random, 0), 1))
    }
}

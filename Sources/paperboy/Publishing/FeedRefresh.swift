import Foundation
import Logging
import Paperboy
import PaperboyConfig

/// Fetches every `[[feeds]]` catalog through the library's transports and lists its issues.
struct FeedRefresh {
    /// An issue wanted by a feed.
    struct FeedIssue {
        var feed: String
        var entry: IssueEntry
    }

    /// The issues to plan, in feed order, and one message per feed that could not be used.
    var issues: [FeedIssue] = []
    var failures: [String] = []

    /// Fetches and parses each feed through the library's own transports (the daemon's feeds);
    /// a broken feed is reported and the others still count.
    ///
    /// Issues named like a configured `[[issues]]` entry or an issue of an earlier feed are left
    /// to the first; issues removed by `paperboy purge` are not added again.
    static func refresh(config: PaperboyConfiguration, library: Library, logger: Logger) async -> FeedRefresh {
        await refresh(config: config, purged: PurgedIssues(library: library).names, logger: logger,
                      fetch: { url, options throws(LibraryError) in try await library.fetchData(from: url, options: options) },
                      exists: { (try? await library.issue(named: $0)) != nil })
    }

    /// Refreshes the feeds of `config` for a command: the catalogs are read through this
    /// process's transports, whichever process holds the library; what is new is judged by the
    /// library's issues (read once) and its purge list.
    static func refresh(config: PaperboyConfiguration, opened: OpenedLibrary, logger: Logger) async -> FeedRefresh {
        let library = opened.library
        let existing: Set<String>
        do {
            existing = Set(try await library.issues().map(\.name))
        } catch {
            return FeedRefresh(issues: [], failures: ["cannot list the library's issues: \(error.message)"])
        }
        return await refresh(config: config, purged: PurgedIssues(library: library).names, logger: logger,
                             fetch: { url, options throws(LibraryError) in try await opened.fetchData(from: url, options: options) },
                             exists: { existing.contains($0) })
    }

    /// The refresh both entry points above run: `fetch` reads a catalog, `exists` says whether
    /// the library has an issue, `purged` are the names `paperboy purge` removed.
    static func refresh(config: PaperboyConfiguration, purged: Set<String>, logger: Logger,
                        fetch: (URL, [String: String]) async throws(LibraryError) -> Data,
                        exists: (String) async -> Bool) async -> FeedRefresh {
        var result = FeedRefresh()
        var taken = Set(config.issues.map(\.name))
        for feed in config.feeds {
            let data: Data
            do {
                data = try await fetch(feed.url, config.transportOptions(for: feed.url))
            } catch {
                result.failures.append("feed '\(feed.name)' (\(feed.url.redactedString)): cannot fetch the catalog: \(error.message)")
                continue
            }
            let catalog: Catalog
            do {
                catalog = try Catalog.parse(data, feed: feed.name, url: feed.url, limits: feed.limits)
            } catch {
                result.failures.append(error.description)
                continue
            }
            var fresh = 0
            for issue in catalog.issues {
                if taken.contains(issue.name) {
                    logger.info("feed '\(feed.name)': issue '\(issue.name)' is already listed elsewhere; keeping the first")
                    continue
                }
                taken.insert(issue.name)
                if purged.contains(issue.name), await !exists(issue.name) {
                    logger.info("feed '\(feed.name)': issue '\(issue.name)' was purged; not adding it again")
                    continue
                }
                if await !exists(issue.name) { fresh += 1 }
                result.issues.append(FeedIssue(feed: feed.name, entry: issue.entry))
            }
            logger.notice("feed '\(feed.name)': \(catalog.issues.count) issue(s), \(fresh) new")
        }
        return result
    }
}

/// The names of issues `paperboy purge` removed, so that a feed still listing them does not
/// bring them back. Kept in `purged-issues.json` in the library folder.
struct PurgedIssues {
    let file: URL

    init(library: Library) {
        self.init(root: library.root)
    }

    /// The list of the library in `root` (a daemon's, for a command that goes through it).
    init(root: URL) {
        file = root.appendingPathComponent("purged-issues.json")
    }

    var names: Set<String> { Set(list) }

    /// The names in the file, oldest first; none when it is absent or unreadable.
    private var list: [String] {
        let reader = JSONReader("purged issues list \(file.path)", limits: .stateFile)
        guard let data = try? reader.contents(of: file) else { return [] }
        return (try? reader.decode([String].self, from: data)) ?? []
    }

    /// Adds `removed` to the list (the most recent 10 000 are kept).
    func record(_ removed: [String]) throws {
        guard !removed.isEmpty else { return }
        var list = self.list
        list.removeAll { removed.contains($0) }
        list.append(contentsOf: removed)
        if list.count > 10_000 { list.removeFirst(list.count - 10_000) }
        try AtomicFile.write(JSONCoding.plain.encoder.encode(list), to: file)
    }

    /// Forgets `name` (an issue added again on purpose, with `paperboy add`).
    func forget(_ name: String) {
        var current = names
        guard current.remove(name) != nil else { return }
        try? AtomicFile.write(JSONCoding.plain.encoder.encode(current.sorted()), to: file)
    }
}

import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// `paperboy sync` killed with SIGKILL at any point of a delivery (transfer, checkpoint, unpack,
/// rename, record): the next run recovers, nothing is left behind, nothing is wedged.
///
/// Not serialized: nothing here is timed (the kill points are random, their span follows the
/// machine's pace), and the two tests, each in a workspace of its own, were the target's longest
/// path one after the other.
@Suite("crash loop", .timeLimit(.minutes(5)))
struct CrashLoopTests {
    let workspace = Workspace()

    /// `count` bytes from `random`, eight at a time (byte by byte, a debug build took seconds).
    static func bytes(_ count: Int, _ random: inout SplitMix64) -> Data {
        var words = [UInt64](repeating: 0, count: (count + 7) / 8)
        for index in words.indices { words[index] = random.next() }
        return words.withUnsafeBytes { Data($0.prefix(count)) }
    }

    /// Zip entries `pages/pNNNNN.txt`, each a short text unique to it.
    func pages(_ count: Int, tag: String) -> [(String, String)] {
        (0..<count).map { index in
            (String(format: "pages/p%05d.txt", index), "page \(index) of \(tag) " + String(repeating: "\(index % 10)", count: 40 + index % 97))
        }
    }

    /// Writes the archive of ``pages(_:tag:)`` with python3 (too many entries for an argument list).
    func zipPages(_ count: Int, tag: String, to name: String) async throws -> [(String, String)] {
        let file = workspace.path(name)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let script = """
            import sys, zipfile
            count, tag = int(sys.argv[2]), sys.argv[3]
            with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as archive:
                for index in range(count):
                    text = "page %d of %s " % (index, tag) + str(index % 10) * (40 + index % 97)
                    archive.writestr("pages/p%05d.txt" % index, text)
            """
        let result = try await CLI.run(["-c", script, file.path, "\(count)", tag], executable: CLI.python3)
        #expect(result.status == 0, "\(result.stderr)")
        return pages(count, tag: tag)
    }

    /// Starts `paperboy sync -q`; the process and the file its standard error goes to.
    /// (Started with `posix_spawn`, as every CLI test's: see ``ChildProcess``.)
    func startSync(_ config: URL) throws -> (ChildProcess, URL) {
        let log = workspace.path("run-\(UUID().uuidString).log")
        let fd = open(log.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
        defer { close(fd) }
        let process = try ChildProcess(CLI.executable.path, ["sync", "-q", "--config", config.path], standardError: fd)
        return (process, log)
    }

    /// Files left behind by an interrupted run: partial and inbox files, unpack staging folders.
    func leftovers(_ library: URL) -> [String] {
        let manager = FileManager.default
        var found: [String] = []
        for folder in [".partial", ".inbox"] {
            found += ((try? manager.contentsOfDirectory(atPath: library.appendingPathComponent(folder).path)) ?? []).map { "\(folder)/\($0)" }
        }
        let issues = library.appendingPathComponent("Issues")
        for issue in (try? manager.contentsOfDirectory(atPath: issues.path)) ?? [] {
            let names = (try? manager.contentsOfDirectory(atPath: issues.appendingPathComponent(issue).path)) ?? []
            found += names.filter { $0.hasPrefix(".unpack-") }.map { "Issues/\(issue)/\($0)" }
        }
        return found
    }

    /// The states of every asset, from `paperboy status --json`.
    func assetStates(_ config: URL) async throws -> [String] {
        let result = try await CLI.run(["status", "--json", "--config", config.path])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let issues = json?["issues"] as? [[String: Any]] ?? []
        return issues.flatMap { ($0["assets"] as? [[String: Any]] ?? []).map { $0["state"] as? String ?? "?" } }
    }

    @Test func aSyncKilledWhileUnpackingIsRecoveredByTheNext() async throws {
        let entries = try await zipPages(4000, tag: "unpack", to: "source/pages.zip")
        let config = workspace.write("""
            [library]
            path = "lib"
            [[issues]]
            name = "u"
            date = 2026-11-21
              [[issues.assets]]
              url = "source/pages.zip"
              unpack = "zip"
            """, to: "paperboy.toml")
        let issue = workspace.path("lib/Issues/u")
        let (process, log) = try startSync(config)
        // Killed as soon as the unpack's staging folder holds its first entry: watched from a
        // thread of its own, which looks every half millisecond (the unpack takes a while).
        let killed = Thread {
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline, process.isRunning {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: issue.path)) ?? []
                if let staging = names.first(where: { $0.hasPrefix(".unpack-") }),
                   let written = try? FileManager.default.contentsOfDirectory(atPath: issue.appendingPathComponent(staging).path),
                   !written.isEmpty {
                    process.signal(SIGKILL)
                    return
                }
                usleep(500)
            }
        }
        killed.start()
        await process.exited()
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        try #require(process.terminationReason == .uncaughtSignal, "the unpack ended before it could be killed: \(output)")
        #expect(!leftovers(workspace.path("lib")).filter { $0.contains(".unpack-") }.isEmpty, "the kill came after the unpack")

        let next = try await CLI.run(["sync", "--config", workspace.path("paperboy.toml").path])
        #expect(next.status == 0, "\(next.stderr)")
        #expect(leftovers(workspace.path("lib")) == [])
        for (name, text) in entries {
            #expect((try? String(contentsOf: issue.appendingPathComponent(name), encoding: .utf8)) == text, "\(name)")
        }
        #expect(try await assetStates(config) == ["delivered"])
    }

    /// Rounds of syncs of an issue (plain files with checksums, one straight to its path, and a
    /// zip to unpack), each run killed after a random delay until one completes; every round
    /// then checks the files byte for byte, leftovers and states. 50 runs at least, 25 of them
    /// killed unless the loop has run for a minute by then.
    @Test func syncsKilledAtRandomPointsAlwaysRecover() async throws {
        let seed = ProcessInfo.processInfo.environment["PAPERBOY_CRASH_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
        print("crash loop: seed \(seed) (set PAPERBOY_CRASH_SEED to replay)")
        // A debug build's byte-by-byte generation holds a thread for long: not one of the pool's.
        let (big, small, generator) = try await offThePool {
            var random = SplitMix64(seed: seed)
            return (Self.bytes(1_000_000, &random), Self.bytes(200_000, &random), random)
        }
        var random = generator
        let entries = try await zipPages(800, tag: "loop", to: "source/pages.zip")
        _ = workspace.write(big, to: "source/big.bin")
        _ = workspace.write(small, to: "source/small.bin")

        var runs = 0
        var kills = 0
        var round = -1
        // Kills land anywhere from start-up to a little past the end of an uninterrupted run
        // (round 0, timed), so that each phase is hit and some runs complete their round.
        var span: useconds_t = 0
        let started = ContinuousClock.now
        // 50 runs at least, and 25 of them killed unless the loop has run for a minute by then.
        while runs < 50 || (kills < 25 && runs < 150 && ContinuousClock.now - started < .seconds(60)) {
            round += 1
            let config = workspace.write("""
                [library]
                path = "lib-\(round)"
                [bandwidth]
                limit = "8MB"
                [[issues]]
                name = "loop"
                date = 2026-11-21
                  [[issues.assets]]
                  url = "source/big.bin"
                  sha256 = "\(sha256Hex(big))"
                  path = "files/big.bin"
                  [[issues.assets]]
                  url = "source/small.bin"
                  path = "small.bin"
                  [[issues.assets]]
                  url = "source/pages.zip"
                  unpack = "zip"
                """, to: "paperboy-\(round).toml")
            if round == 0 {
                let clock = ContinuousClock.now
                let result = try await CLI.run(["sync", "-q", "--config", config.path])
                #expect(result.status == 0, "\(result.stderr)")
                span = Self.span(for: ContinuousClock.now - clock)
            }
            var fresh = true
            var killsThisRound = 0
            while round > 0 {
                let runStarted = ContinuousClock.now
                let (process, log) = try startSync(config)
                runs += 1
                let delay = useconds_t.random(in: 0...span, using: &random)
                // After four kills in a round (the machine slower than the span), a run is let
                // finish: every round ends with a recovery.
                if killsThisRound < 4 {
                    Thread {
                        usleep(delay)
                        process.signal(SIGKILL)
                    }.start()
                }
                await process.exited()
                if process.terminationReason == .uncaughtSignal {
                    kills += 1
                    killsThisRound += 1
                    fresh = false
                    continue
                }
                if fresh {
                    // A whole run the kill missed: kills follow this machine's pace, which
                    // changes while other tests run.
                    span = Self.span(for: ContinuousClock.now - runStarted)
                }
                let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                #expect(process.terminationStatus == 0, "round \(round), run \(runs) (seed \(seed)): \(output)")
                break
            }
            let library = workspace.path("lib-\(round)")
            let issue = library.appendingPathComponent("Issues/loop")
            #expect((try? Data(contentsOf: issue.appendingPathComponent("files/big.bin"))) == big, "round \(round) (seed \(seed))")
            #expect((try? Data(contentsOf: issue.appendingPathComponent("small.bin"))) == small, "round \(round) (seed \(seed))")
            let mismatched = entries.filter { (try? String(contentsOf: issue.appendingPathComponent($0.0), encoding: .utf8)) != $0.1 }
            #expect(mismatched.count == 0, "round \(round) (seed \(seed)): \(mismatched.count) pages differ, first \(mismatched.first?.0 ?? "")")
            #expect(leftovers(library) == [], "round \(round) (seed \(seed))")
            #expect(try await assetStates(config) == ["delivered", "delivered", "delivered"], "round \(round) (seed \(seed))")
        }
        print("crash loop: \(runs) runs, \(kills) killed, \(round) rounds, kills within \(span / 1000) ms, in \(ContinuousClock.now - started) (seed \(seed))")
        #expect(kills >= 15, "too few runs were killed (\(kills) of \(runs)) to exercise recovery")
    }

    /// Kill delays for runs that take `elapsed` when nothing kills them: up to a little past it.
    static func span(for elapsed: Duration) -> useconds_t {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return useconds_t(min(max(seconds, 0.2), 3) * 1.2e6)
    }
}

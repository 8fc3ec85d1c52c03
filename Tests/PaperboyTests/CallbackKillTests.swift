import Foundation
import GRDB
import PaperboyTestServers
import PaperboyTesting
import Testing
@testable import Paperboy

/// At least once, when the app dies inside `didFinishDownloadingTo`: a real app process
/// (`CallbackKillApp`) is killed with SIGKILL inside the callback, then the library is reopened
/// and the README's relaunch loop must get the file.
@Suite("Killed inside didFinish", .timeLimit(.minutes(2)))
struct CallbackKillTests {
    let folder = TempFolder()

    static var app: URL { BuiltExecutable.url(named: "CallbackKillApp") }

    /// Where in `didFinish` the app is killed: as soon as its callback began (before the library
    /// has recorded the file as finished, as a rule), or once the database says `finished`.
    enum KillPoint: String, CustomStringConvertible {
        case atOnce = "at once"
        case afterFinishedIsRecorded = "after 'finished' is recorded"
        var description: String { rawValue }
    }

    /// Runs the app on `library` and kills it at `point` of its `didFinish`. Returns whether the
    /// callback was reached.
    func runKilledInsideCallback(library: URL, source: URL, at point: KillPoint) async throws -> Bool {
        let (process, reached) = try await ChildProcess.startedUntilKillPoint(
            Self.app.path, [library.path, source.path], killingAtTheByte: point == .atOnce)
        if reached, point == .afterFinishedIsRecorded {
            var configuration = GRDB.Configuration()
            configuration.readonly = true
            let database = try DatabaseQueue(path: LibraryLayout(root: library).database.path, configuration: configuration)
            var state: String?
            try await eventually("'finished' recorded", seen: "\(state ?? "no row")") {
                state = try await database.read { db in try String.fetchOne(db, sql: "SELECT state FROM asset") }
                return state == PersistedState.finished.rawValue
            }
            process.signal(SIGKILL)
        }
        await process.exited()
        return reached
    }

    @Test func aFileFinishedWhenTheAppDiesInsideDidFinishIsDeliveredOnRelaunch() async throws {
        let data = randomData(300_000)
        let source = folder.file("source.bin")
        try data.write(to: source)
        for point: KillPoint in [.atOnce, .afterFinishedIsRecorded, .atOnce, .afterFinishedIsRecorded] {
            let root = folder.file("library-\(UUID().uuidString.prefix(8))")
            let reached = try await runKilledInsideCallback(library: root, source: source, at: point)
            try #require(reached, "the app never reached didFinish (kill \(point))")

            // The relaunch, as README's Embedding section writes it.
            let library = try Library.open(at: root, transports: TransportRegistry([InMemoryTransport()]), configuration: Library.Configuration.forTests())
            let pending = library.downloadingAssets
            #expect(pending.count == 1, "killed \(point) in didFinish: \(pending.count) assets listed")
            #expect(pending.first?.state == .finished, "killed \(point) in didFinish: \(String(describing: pending.first?.state))")
            #expect(pending.first?.totalBytesWritten == Int64(data.count))
            let delegate = RecordingDelegate()
            for asset in library.downloadingAssets { try await asset.download(delegate: delegate) }
            if let asset = pending.first {
                let outcome = try await asset.waitUntilFinished()
                if case .delivered = outcome {} else { Testing.Issue.record("killed \(point) in didFinish: \(outcome)") }
            }
            #expect(delegate.keptFiles == [data], "killed \(point) in didFinish")
            await library.close()
        }
    }
}

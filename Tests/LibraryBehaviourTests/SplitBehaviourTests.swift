import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Testing

/// A download over several connections and a mirror shows, while it runs, its pieces and each
/// source's bytes and connections (``AssetStatus/split``), in process and through a daemon; and
/// nothing once it ended.
@Suite("Library behaviour: a split download's pieces and sources", .timeLimit(.minutes(2)))
struct SplitBehaviourTests {
    @Test(arguments: Backends.all)
    func aSplitDownloadShowsItsPiecesAndSourcesWhileItRuns(backend: any BackendFactory) async throws {
        let data = try await generated(40 << 20, seed: 441)
        // Every answer sends 1 MiB, then waits for the test: the figures hold still to be read.
        let sources = try HeldSources(serving: data)
        defer { sources.stop() }
        let home = BehaviourHome(backend)
        try await home.with({ configuration in
            configuration.connectionsPerAsset = 4
            // A mirror silent for 1/120 of the idle timeout is dropped: the holds must not be.
            configuration.idleTimeout = .seconds(7200)
        }) { library in
            var request = AssetRequest(url: sources.url, sha256: sha256Hex(data), destinationPath: "big.bin")
            request.mirrors = [sources.mirrorURL]
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(request)
            try await asset.download()
            // Connections 0 and 2 ask the URL, 1 and 3 the mirror; each wrote 1 MiB and waits.
            var seen: SplitProgress?
            try await eventually("each source to show 2 MiB over 2 connections", seen: "\(String(describing: seen)); the mirror was asked \(sources.mirror.requests.map { $0.header("range") ?? "-" }), the URL \(sources.main.requests.map { $0.header("range") ?? "-" })") {
                seen = try await asset.status().split
                return seen?.sources.map(\.bytes) == [2 << 20, 2 << 20] && seen?.sources.map(\.connections) == [2, 2]
            }
            let split = try #require(seen)
            #expect(split.sources.map(\.url) == [sources.url, sources.mirrorURL])
            #expect(split.sources.allSatisfy { !$0.isDemoted })
            #expect(split.pieces >= 4 && split.piecesDone == 0, "\(split)")
            #expect(split.connections == 4)

            sources.release()
            #expect(try await asset.waitUntilFinished() == .delivered)
            #expect(try await asset.status().split == nil)
        }
    }
}

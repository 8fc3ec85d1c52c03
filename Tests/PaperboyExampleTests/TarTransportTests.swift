#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyTesting
import PaperboyTransportTesting
import TarTransportExample
import Testing

/// Publishes each resource as the second entry of its own tar archive.
final class TarFixture: TransportFixture, @unchecked Sendable {
    let folder = FolderFixture()
    static let neighbour = Data("a neighbouring entry".utf8)

    func publish(_ data: Data, as name: String) async throws -> URL {
        let archive = folder.file(name + ".tar")
        try TarWriter.archive([("issue/readme.txt", Self.neighbour), ("issue/\(name)", data)]).write(to: archive)
        return TarTransport.url(archive: archive, entry: "issue/\(name)")
    }

    func replace(_ url: URL, with data: Data) async throws {
        let path = url.path
        guard let bang = path.range(of: "!/") else { throw CocoaError(.fileReadInvalidFileName) }
        let archive = URL(fileURLWithPath: String(path[..<bang.lowerBound]))
        let entry = String(path[bang.upperBound...])
        let fresh = archive.appendingPathExtension("new")
        try TarWriter.archive([("issue/readme.txt", Self.neighbour), (entry, data)]).write(to: fresh)
        guard rename(fresh.path, archive.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    func missingURL() async throws -> URL {
        let archive = folder.file("present.tar")
        try TarWriter.archive([("issue/readme.txt", Self.neighbour)]).write(to: archive)
        return TarTransport.url(archive: archive, entry: "issue/absent.pdf")
    }
}

@Suite("TarTransport example", .timeLimit(.minutes(2)))
struct TarTransportTests {
    @Test(arguments: TransportConformance.Check.allCases)
    func conformance(_ check: TransportConformance.Check) async {
        let outcome = await TransportConformance(TarTransport(), fixture: TarFixture()).run(check)
        let unsupported: Set<TransportConformance.Check> = [.ignoredRangeRestarts, .authenticationRefused, .droppedConnection, .challenges, .ranges, .segments]
        if unsupported.contains(check) {
            #expect(outcome != .passed)
        } else {
            #expect(outcome == .passed)
        }
    }

    @Test func readsEntriesWithLongPaxNamesAndLeavesNeighboursAlone() async throws {
        let folder = FolderFixture()
        let long = String(repeating: "deep/", count: 30) + "cover.png"
        let cover = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let archive = folder.file("issue.tar")
        try TarWriter.archive([("first.txt", Data("one".utf8)), (long, cover), ("last.txt", Data("three".utf8))]).write(to: archive)
        let sink = RecordingSink()
        try await TarTransport().transfer(TransferJob(url: TarTransport.url(archive: archive, entry: "./" + long)), into: sink)
        #expect(Bytes(sink.data) == Bytes(cover))
        let last = RecordingSink()
        try await TarTransport().transfer(TransferJob(url: TarTransport.url(archive: archive, entry: "last.txt")), into: last)
        #expect(Bytes(last.data) == Bytes(Data("three".utf8)))
    }

    @Test func malformedURLsAndArchivesAreFatal() async throws {
        let folder = FolderFixture()
        let notTar = folder.file("not.tar")
        try Data(repeating: 0x41, count: 2048).write(to: notTar)
        let cases: [(URL, TransportError.Code)] = [
            (URL(string: "tar://localhost/srv/archive.tar")!, .badURL),
            (URL(string: "tar://elsewhere/srv/a.tar!/x")!, .badURL),
            (TarTransport.url(archive: notTar, entry: "x"), .protocolError),
            (TarTransport.url(archive: folder.file("absent.tar"), entry: "x"), .notFound),
        ]
        for (url, code) in cases {
            do {
                try await TarTransport().transfer(TransferJob(url: url), into: RecordingSink())
                Issue.record("expected \(code) for \(url)")
            } catch let error as TransportError {
                #expect(error.code == code, "\(url): \(error)")
                #expect(!error.isRetryable)
            }
        }
    }
}

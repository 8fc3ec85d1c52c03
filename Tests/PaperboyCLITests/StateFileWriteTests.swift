#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
@testable import PaperboyDaemon
import PaperboyTestServers
import PaperboyTesting
import Testing
@testable import paperboy

/// Every state file the library folder holds is written the one atomic way (issue 28): private
/// (0600) even over a file that was not, replaced whole, and on a full disk the old file stays,
/// no temporary file is left, and the error names the file.
@Suite("State files written atomically", .timeLimit(.minutes(1)))
struct StateFileWriteTests {
    /// One writer of a state file, and how to read back what it wrote.
    enum Writer: String, CaseIterable, CustomTestStringConvertible {
        case claims, daemonRecord, feedSchedule, purgedRecord, purgedForget

        var testDescription: String { rawValue }

        var fileName: String {
            switch self {
            case .claims: ClaimsFile.fileName
            case .daemonRecord: DaemonRecord.fileName
            case .feedSchedule: FeedSchedule.fileName
            case .purgedRecord, .purgedForget: "purged-issues.json"
            }
        }

        /// A file there before the write: long, so that a write in place would leave its tail.
        var previous: Data {
            switch self {
            // Forgetting reads the list first: a valid, longer one.
            case .purgedForget: Data(#"["gone",\#((1...2_000).map { "\"issue-\($0)\"" }.joined(separator: ","))]"#.utf8)
            default: Data(repeating: 0x20, count: 50_000) + Data("[]".utf8)
            }
        }

        static let schedule = FeedSchedule(next: ["daily": Date(timeIntervalSince1970: 1_800_000_000)])

        /// Writes the state file in `root`, throwing what the writer throws (forgetting throws nothing).
        func write(in root: URL) throws {
            switch self {
            case .claims: try ClaimsFile(libraryRoot: root).write(["a1", "a2"])
            case .daemonRecord: try DaemonRecord(pid: 4242, socket: "/run/paperboy/daemon.sock").write(in: root)
            case .feedSchedule: try Self.schedule.save(to: root.appendingPathComponent(fileName))
            case .purgedRecord: try PurgedIssues(root: root).record(["weekly"])
            case .purgedForget: PurgedIssues(root: root).forget("gone")
            }
        }

        /// Whether what is in `root` reads back as what ``write(in:)`` wrote.
        func wroteWhole(in root: URL) throws -> Bool {
            switch self {
            case .claims:
                return ClaimsFile(libraryRoot: root).read() == .claims(["a1", "a2"])
            case .daemonRecord:
                let data = try Data(contentsOf: root.appendingPathComponent(fileName))
                return try JSONDecoder().decode(DaemonRecord.self, from: data) == DaemonRecord(pid: 4242, socket: "/run/paperboy/daemon.sock")
            case .feedSchedule:
                let loaded = FeedSchedule.load(from: root.appendingPathComponent(fileName))
                return loaded.problem == nil && loaded.schedule == Self.schedule
            case .purgedRecord:
                return PurgedIssues(root: root).names == ["weekly"]
            case .purgedForget:
                return PurgedIssues(root: root).names == Set((1...2_000).map { "issue-\($0)" })
            }
        }
    }

    let folder = TempFolder(prefix: "pbsw")

    @Test(arguments: Writer.allCases)
    func aFileThatExistedIsReplacedWholeAndPrivate(_ writer: Writer) throws {
        let root = folder.file("lib")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let file = root.appendingPathComponent(writer.fileName)
        try writer.previous.write(to: file)
        chmod(file.path, 0o644)
        try writer.write(in: root)
        #expect(try writer.wroteWhole(in: root), "\(String(decoding: (try? Data(contentsOf: file)) ?? Data(), as: UTF8.self).prefix(200))")
        #expect(FileFacts.mode(file) == 0o600)
        #expect(FileFacts.names(in: root) == [writer.fileName])
    }

    @Test(arguments: Writer.allCases)
    func aNewFileIsPrivate(_ writer: Writer) throws {
        guard writer != .purgedForget else { return }  // forgetting in no list writes nothing
        let root = folder.file("lib")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try writer.write(in: root)
        #expect(FileFacts.mode(root.appendingPathComponent(writer.fileName)) == 0o600)
        #expect(FileFacts.names(in: root) == [writer.fileName])
    }

    @Test(arguments: Writer.allCases)
    func aFullDiskLeavesTheOldFileAndNoTemporaryOne(_ writer: Writer) throws {
        guard let disk = try SmallFileSystem.mount(megabytes: 1) else { return }
        defer { disk.unmount() }
        let root = disk.url
        let file = root.appendingPathComponent(writer.fileName)
        // Short, so that the new content does not fit in its last page.
        let previous = writer == .purgedForget ? Data(#"["gone"]"#.utf8) : Data("[]".utf8)
        try previous.write(to: file)
        chmod(file.path, 0o600)
        try disk.fill()
        do {
            try writer.write(in: root)
            #expect(writer == .purgedForget, "the write did not fail on a full disk")
        } catch {
            #expect("\(error)".contains(file.path), "\(error)")
        }
        #expect(try Data(contentsOf: file) == previous)
        #expect(FileFacts.names(in: root) == ["filler", writer.fileName].sorted())
    }
}

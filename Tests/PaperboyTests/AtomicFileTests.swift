#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Testing

/// The one atomic write (`AtomicFile`): the mode it is told, a file replaced
/// whole, a link replaced rather than followed, and a failure that leaves the old file and no
/// temporary one, naming the path.
@Suite("Atomic file writes", .timeLimit(.minutes(1)))
struct AtomicFileTests {
    let folder = TempFolder(prefix: "pbaf")

    /// With the usual umask (022), a file created by default is 0644.
    @Test func aNewFileHasTheModeItIsTold() throws {
        let file = folder.file("state.json")
        try AtomicFile.write(Data("{}".utf8), to: file)
        #expect(FileFacts.mode(file) == 0o600)
        try AtomicFile.write(Data("{}".utf8), to: folder.file("served.bin"), mode: 0o644, durable: false)
        #expect(FileFacts.mode(folder.file("served.bin")) == 0o644)
    }

    @Test func anExistingFileIsReplacedWholeAndMadePrivate() throws {
        let file = folder.file("state.json")
        try Data(repeating: 0x78, count: 100_000).write(to: file)
        chmod(file.path, 0o644)
        try AtomicFile.write(Data("[1]".utf8), to: file)
        #expect(try Data(contentsOf: file) == Data("[1]".utf8))
        #expect(FileFacts.mode(file) == 0o600)
        #expect(FileFacts.names(in: folder.url) == ["state.json"])
    }

    @Test func aLinkAtTheNameIsReplacedNotFollowed() throws {
        let target = folder.file("elsewhere")
        try Data("theirs".utf8).write(to: target)
        let file = folder.file("state.json")
        try FileManager.default.createSymbolicLink(at: file, withDestinationURL: target)
        try AtomicFile.write(Data("ours".utf8), to: file)
        #expect(try Data(contentsOf: target) == Data("theirs".utf8))
        var info = stat()
        #expect(lstat(file.path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
        #expect(try Data(contentsOf: file) == Data("ours".utf8))
    }

    @Test func aFullDiskLeavesTheOldFileAndNoTemporaryOne() throws {
        guard let disk = try SmallFileSystem.mount(megabytes: 1) else { return }
        defer { disk.unmount() }
        let file = disk.url.appendingPathComponent("state.json")
        try AtomicFile.write(Data("old".utf8), to: file)
        try disk.fill()
        let error = #expect(throws: LibraryError.self) {
            try AtomicFile.write(Data(repeating: 0x20, count: 10_000), to: file)
        }
        #expect(error?.code == .insufficientStorage)
        #expect(error?.message.contains(file.path) == true, "\(String(describing: error))")
        #expect(error?.message.contains("No space left on device") == true, "\(String(describing: error))")
        #expect(try Data(contentsOf: file) == Data("old".utf8))
        #expect(FileFacts.names(in: disk.url) == ["filler", "state.json"])
    }

    @Test func aMissingFolderIsNamed() throws {
        let file = folder.file("gone/state.json")
        let error = #expect(throws: LibraryError.self) { try AtomicFile.write(Data("{}".utf8), to: file) }
        #expect(error?.message == "cannot open folder \(folder.file("gone").path): No such file or directory")
    }

    @Test func aBuiltFileIsRenamedIntoPlacePrivate() throws {
        let file = folder.file("library.sqlite")
        try Data("old".utf8).write(to: file)
        try AtomicFile.replace(file) { fresh in
            #expect(fresh.deletingLastPathComponent().path == folder.url.path)
            #expect(FileFacts.mode(fresh) == 0o600)
            try Data("new".utf8).write(to: fresh)
        }
        #expect(try Data(contentsOf: file) == Data("new".utf8))
        #expect(FileFacts.names(in: folder.url) == ["library.sqlite"])
    }

    @Test func aFailedBuildLeavesTheOldFileAndNoTemporaryOne() throws {
        struct Refused: Error {}
        let file = folder.file("library.sqlite")
        try Data("old".utf8).write(to: file)
        #expect(throws: Refused.self) {
            try AtomicFile.replace(file) { fresh in
                try Data("half".utf8).write(to: fresh)
                throw Refused()
            }
        }
        #expect(try Data(contentsOf: file) == Data("old".utf8))
        #expect(FileFacts.names(in: folder.url) == ["library.sqlite"])
    }
}

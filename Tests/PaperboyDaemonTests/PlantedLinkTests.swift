#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyWire
import PaperboyDaemon
import PaperboyTesting
import Testing

/// Issue 26, case 5: in a shared runtime folder (mode 1777, as in many containers) another user
/// plants `paperboy` as a link to a folder of ours, or makes it a folder of theirs; and a link
/// where `daemon.json` is read. Nothing is followed; the error names the path and the owner.
///
/// The other user is uid 65534 (nobody): the tests run as root, make the link or folder, and
/// give it away with `lchown`.
@Suite("Links another user could plant", .enabled(if: getuid() == 0, "needs root to give files to another user"),
       .timeLimit(.minutes(2)))
struct PlantedLinkTests {
    let home = DaemonHome()
    static let other: uid_t = 65534

    /// The runtime folder shared by everyone (1777), a folder of ours elsewhere, and the link
    /// another user planted in the runtime folder to it.
    func plantLink() -> (planted: URL, victim: URL) {
        #expect(chmod(home.runtime.path, 0o1777) == 0)
        let victim = home.folder.file("victim")
        #expect(mkdir(victim.path, 0o755) == 0)
        let planted = home.runtime.appendingPathComponent("paperboy")
        #expect(symlink(victim.path, planted.path) == 0)
        #expect(lchown(planted.path, Self.other, Self.other) == 0)
        return (planted, victim)
    }

    /// The message of the `.storage` error starting a daemon fails with.
    func startFailure() async throws -> String {
        do {
            let daemon = try await home.start()
            await daemon.stop()
        } catch let error as LibraryError where error.code == .storage {
            return error.message
        }
        Issue.record("the daemon started")
        return ""
    }

    @Test func aLinkPlantedInASharedRuntimeFolderIsNotFollowed() async throws {
        let (planted, victim) = plantLink()
        let message = try await startFailure()
        #expect(message.contains(planted.path), "\(message)")
        #expect(message.contains("symbolic link (owned by uid 65534)"), "\(message)")
        #expect(home.mode(victim) == 0o755, "the folder the link leads to is left as it was")
        #expect(!FileManager.default.fileExists(atPath: victim.appendingPathComponent("daemon.sock").path))
        // A client does not go through it either.
        guard case .refused(let reason) = DaemonSocket.trust(home.socket) else {
            Issue.record("a client trusts \(home.socket.path) through the link")
            return
        }
        #expect(reason.contains(planted.path) && reason.contains("uid 65534"), "\(reason)")
    }

    @Test func aFolderOfAnotherUserInTheRuntimeFolderIsNotTakenOver() async throws {
        #expect(chmod(home.runtime.path, 0o1777) == 0)
        let theirs = home.runtime.appendingPathComponent("paperboy")
        #expect(mkdir(theirs.path, 0o777) == 0 && chmod(theirs.path, 0o777) == 0)
        #expect(chown(theirs.path, Self.other, Self.other) == 0)
        #expect(try await startFailure().contains("\(theirs.path) belongs to uid 65534, not to this user (0)"))
        #expect(home.mode(theirs) == 0o777)
        #expect(DaemonSocket.trust(home.socket) == .refused("\(theirs.path) belongs to uid 65534, not to this user (0)"))
    }

    @Test func aRuntimeFolderOthersCanWriteWithoutTheStickyBitIsRefused() async throws {
        #expect(chmod(home.runtime.path, 0o777) == 0)
        let message = try await startFailure()
        #expect(message.contains("\(home.runtime.path) has mode 777: other users could replace what is in it"), "\(message)")
    }

    @Test func aLinkOfOursInAFolderOnlyWeCanWriteIsFollowed() async throws {
        // The runtime folder is ours (0700): only we (or root) could have made the link.
        let target = home.folder.file("elsewhere")
        #expect(mkdir(target.path, 0o755) == 0)
        #expect(symlink(target.path, home.runtime.appendingPathComponent("paperboy").path) == 0)
        try await home.withDaemon { _ in
            _ = try await WireClient.negotiated(home.socket)
            #expect(home.mode(target) == 0o700)
        }
    }

    @Test func daemonJSONReachedThroughALinkIsNotRead() async throws {
        try await home.withDaemon { daemon in
            let record = daemon.library.root.appendingPathComponent("daemon.json")
            #expect(DaemonRecord.running(in: daemon.library.root) != nil)
            // Replaced by a link to a record elsewhere (naming this live process).
            let elsewhere = home.folder.file("record.json")
            try Data(contentsOf: record).write(to: elsewhere)
            #expect(unlink(record.path) == 0 && symlink(elsewhere.path, record.path) == 0)
            #expect(lchown(record.path, Self.other, Self.other) == 0)
            #expect(DaemonRecord.running(in: daemon.library.root) == nil, "a record reached through a link is not read")
        }
    }
}

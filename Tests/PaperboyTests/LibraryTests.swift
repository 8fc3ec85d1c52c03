import Foundation
import Testing
@testable import Paperboy
import PaperboyTestServers
import PaperboyTesting

@Suite("Library", .timeLimit(.minutes(2)))
struct LibraryTests {
    let folder = TempFolder()
    var root: URL { folder.file("library") }

    func open(_ transport: InMemoryTransport = InMemoryTransport()) throws -> Library {
        try Library.open(at: root, transports: TransportRegistry([transport]), configuration: Library.Configuration.forTests())
    }

    @Test func issuesPersistAcrossReopen() async throws {
        let library = try open()
        let older = try await library.addIssue(name: "2026-11-20", date: Date(timeIntervalSince1970: 1_000))
        try await library.addIssue(name: "2026-11-21", date: Date(timeIntervalSince1970: 2_000))
        try await library.setCurrentlyReadingIssue(older)
        await library.close()

        let reopened = try open()
        #expect(reopened.issues.map(\.name) == ["2026-11-21", "2026-11-20"])
        #expect(try await reopened.issue(named: "2026-11-20")?.date == Date(timeIntervalSince1970: 1_000))
        #expect(try await reopened.issue(named: "missing") == nil)
        #expect(reopened.currentlyReadingIssue?.name == "2026-11-20")
        #expect(try await reopened.issue(named: "2026-11-21")?.status == .notDownloaded)
        await reopened.close()
    }

    @Test func anUnreadableIssueDateIsAnErrorNotACrash() async throws {
        var library = try open()
        try await library.addIssue(name: "odd", date: Date(timeIntervalSince1970: 1_000))
        try await library.scheduler.store.pool.write { db in
            try db.execute(sql: "UPDATE issue SET date = 'not a date' WHERE name = 'odd'")
        }
        await library.close()
        library = try open()
        // The issue cannot be read; reading it must not stop the process.
        #expect(try await library.issue(named: "odd") == nil)
        #expect(library.issues.isEmpty)
        await library.close()
    }

    @Test func assetRowsReadTheSameWithAColumnAdded() async throws {
        // Asset rows are read by position; the selection names the columns, so a column a later
        // schema adds (here at the end) cannot shift them.
        var library = try open()
        let issue = try await library.addIssue(name: "i", date: Date())
        let added = try await issue.addAsset(AssetRequest(url: URL(fileURLWithPath: "/nowhere/a"), sha256: String(repeating: "a", count: 64), destinationPath: "a"))
        try await library.scheduler.store.pool.write { db in
            try db.execute(sql: "ALTER TABLE asset ADD COLUMN extra TEXT DEFAULT 'x'")
            try db.execute(sql: "UPDATE asset SET attempts = 3, expectedBytes = 7, validator = 'v', validatorStrength = 'strong'")
        }
        await library.close()
        library = try open()
        let record = try #require(library.scheduler.store.asset(id: added.identifier))
        #expect(record.issueName == "i")
        #expect(record.request.destinationPath == "a")
        #expect(record.attempts == 3)
        #expect(record.expectedBytes == 7)
        #expect(record.resourceValidator == ResourceValidator("v", strength: .strong))
        await library.close()
    }

    @Test func aDamagedRequestFailsItsAssetAndSparesTheOthers() async throws {
        let transport = InMemoryTransport()
        let good = transport.serve(randomData(1000, seed: 1), at: "good")
        let bad = transport.serve(randomData(1000, seed: 2), at: "bad")
        var library = try open(transport)
        let issue = try await library.addIssue(name: "i", date: Date())
        let kept = try await issue.addAsset(AssetRequest(url: good, destinationPath: "good"))
        let damaged = try await issue.addAsset(AssetRequest(url: bad, destinationPath: "bad"))
        try await library.scheduler.store.pool.write { db in
            try db.execute(sql: "UPDATE asset SET url = 42 WHERE id = ?", arguments: [damaged.identifier])
        }
        await library.close()

        library = try open(transport)
        let statuses = try #require(await library.issue(named: "i")).assetStatuses
        #expect(statuses.map(\.identifier) == [kept.identifier, damaged.identifier])
        #expect(statuses[0].request.url == good)
        guard case .failed(let message)? = try await library.asset(identifier: damaged.identifier)?.state else {
            Issue.record("the damaged asset should be failed")
            return
        }
        #expect(message.contains("unreadable"))
        let delegate = RecordingDelegate()
        try await library.asset(identifier: damaged.identifier)?.download(delegate: delegate)
        try await library.asset(identifier: kept.identifier)?.download()
        await library.waitUntilIdle()
        #expect(delegate.events.contains { if case .failed(_, let text) = $0 { text.contains("unreadable") } else { false } })
        #expect(try await library.asset(identifier: kept.identifier)?.state == .delivered)
        await library.close()
    }

    @Test func libraryFilesArePrivate() async throws {
        let library = try open()
        defer { Task { await library.close() } }
        let attributes = try FileManager.default.attributesOfItem(atPath: root.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        let database = try FileManager.default.attributesOfItem(atPath: root.appendingPathComponent("library.sqlite").path)
        #expect((database[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test func aLibraryFolderThatCannotBeCreatedIsNamedWithTheSystemsReason() async throws {
        // A file where a folder must go (root may write anywhere, so no permission test).
        try Data("x".utf8).write(to: folder.file("plain-file"))
        for path in ["plain-file/library", "plain-file"] {
            do {
                _ = try Library.open(at: folder.file(path), transports: TransportRegistry([InMemoryTransport()]), configuration: Library.Configuration.forTests())
                Testing.Issue.record("opened a library at \(path)")
            } catch {
                #expect(error.message == "cannot create folder \(folder.file(path).path): Not a directory")
            }
        }
        // Missing parents are made, private to the user.
        let nested = try Library.open(at: folder.file("a/b/library"), transports: TransportRegistry([InMemoryTransport()]),
                                      configuration: Library.Configuration.forTests())
        await nested.close()
        for path in ["a", "a/b", "a/b/library"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: folder.file(path).path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700, "\(path)")
        }
    }

    @Test func secondOpenOfTheSameFolderIsRefused() async throws {
        let library = try open()
        // A refused open retries the lock for about a second: on a thread of its own, not the
        // test pool's.
        let root = self.root
        let refusal = try await offThePool { () -> String in
            do {
                _ = try Library.open(at: root, transports: TransportRegistry([InMemoryTransport()]), configuration: Library.Configuration.forTests())
                return "opened"
            } catch let error as LibraryError {
                return error.message
            } catch {
                return "\(error)"
            }
        }
        #expect(refusal.contains("open in another process"), "\(refusal)")
        await library.close()
        let again = try open()
        await again.close()
    }

    @Test func duplicateIssueNameIsAClearError() async throws {
        let library = try open()
        try await library.addIssue(name: "weekly", date: Date())
        do {
            try await library.addIssue(name: "weekly", date: Date())
            Testing.Issue.record("expected an error")
        } catch {
            #expect(error.code == .duplicateIssue)
            #expect(error.message.contains("'weekly'"))
        }
        await library.close()
    }

    // The last four passed the library's copy of the rule (issue 26): a C1 control, which the
    // configuration refused, a bidi override, spaces only, and dots as Unicode look-alikes.
    @Test(arguments: ["", ".", "..", "a/b", "a\\b", "nul\u{0}name", "tab\tname", ".hidden", String(repeating: "x", count: 256),
                      "a\u{85}b", "\u{202E}fdp.exe", "  ", "．．"])
    func invalidIssueNamesAreRejected(_ name: String) async throws {
        let library = try open()
        do {
            try await library.addIssue(name: name, date: Date())
            Testing.Issue.record("expected an error for \(name.debugDescription)")
        } catch {
            #expect(error.code == .invalidIssueName)
        }
        #expect(library.issues.isEmpty)
        await library.close()
    }

    @Test func unicodeIssueNamesAreFine() async throws {
        let library = try open()
        let issue = try await library.addIssue(name: "Ausgabe März 2026 — Nº 3", date: Date())
        #expect(issue.contentURL.lastPathComponent == "Ausgabe März 2026 — Nº 3")
        await library.close()
    }

    @Test func userInfoIsBoundedAndPersisted() async throws {
        let transport = InMemoryTransport()
        let url = transport.serve(Data("x".utf8), at: "a")
        let library = try open(transport)
        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: url), userInfo: ["page": 3, "title": "Cover", "tags": ["a", "b"]])
        #expect(asset.userInfo == ["page": 3, "title": "Cover", "tags": ["a", "b"]])
        do {
            try await issue.addAsset(AssetRequest(url: url), userInfo: .string(String(repeating: "y", count: 70_000)))
            Testing.Issue.record("expected userInfoTooLarge")
        } catch {
            #expect(error.code == .userInfoTooLarge)
            #expect(error.message.contains("65536"))
        }
        #expect(issue.assets.count == 1)
        await library.close()
        let reopened = try open(transport)
        #expect(try await reopened.asset(identifier: asset.identifier)?.userInfo == ["page": 3, "title": "Cover", "tags": ["a", "b"]])
        await reopened.close()
    }

    /// Mirrors are stored with the request (column `mirrors`, migration `v6-mirrors`) and read
    /// back in their order; a request without them stores none.
    @Test func mirrorsPersistAcrossReopenInTheirOrder() async throws {
        let library = try open()
        let issue = try await library.addIssue(name: "i", date: Date())
        var request = AssetRequest(url: URL(string: "https://cdn.example.com/a.iso")!, destinationPath: "a.iso")
        request.mirrors = [URL(string: "https://m2.example.org/a.iso")!, URL(string: "https://m1.example.net/pub/a.iso")!]
        // With a chunk index too: each in its own column (indexURL, then mirrors), none shifted.
        request.index = URL(string: "https://cdn.example.com/a.iso.pbidx")!
        let asset = try await issue.addAsset(request)
        let plain = try await issue.addAsset(AssetRequest(url: URL(string: "https://cdn.example.com/b.iso")!, destinationPath: "b.iso"))
        await library.close()
        let reopened = try open()
        let stored = try await reopened.asset(identifier: asset.identifier)?.request
        #expect(stored?.mirrors == request.mirrors)
        #expect(stored?.index == request.index)
        #expect(stored?.url == request.url && stored?.destinationPath == "a.iso")
        #expect(try await reopened.asset(identifier: plain.identifier)?.request?.mirrors == [])
        #expect(try await reopened.asset(identifier: plain.identifier)?.request?.index == nil)
        await reopened.close()
    }

    @Test func malformedRequestsAreRejected() async throws {
        let library = try open()
        let issue = try await library.addIssue(name: "i", date: Date())
        let url = URL(string: "mem://example/a")!
        // The last three passed the library's copy of the rule (issue 26): `\`, which archives
        // refused, a C1 control, which the configuration refused, and only dots.
        for path in ["../escape", "/etc/passwd", "a/../../b", "", "a//b", "pages\\a.pdf", "a\u{85}.pdf", "..."] {
            do {
                try await issue.addAsset(AssetRequest(url: url, destinationPath: path))
                Testing.Issue.record("expected \(path.debugDescription) to be refused")
            } catch {
                #expect(error.code == .invalidPath, "\(path.debugDescription): \(error)")
            }
        }
        await #expect(throws: LibraryError.self) { try await issue.addAsset(AssetRequest(url: url, sha256: "abc")) }
        #expect(issue.assets.isEmpty)
        await library.close()
    }

    @Test func aPasswordInAnAssetURLIsRefusedAndNeverStored() async throws {
        let library = try open()
        let issue = try await library.addIssue(name: "i", date: Date())
        let password = "s3cret-pw-in-url"
        // In the URL, and in a mirror (a mirror is a URL like the asset's).
        for (text, mirror) in [("https://alice:\(password)@cdn.example.com/a.pdf", nil), ("mem://bob:\(password)@example/a", nil),
                               ("https://cdn.example.com/a.pdf", "https://dave:\(password)@mirror.example.org/a.pdf")] {
            let url = try #require(URL(string: text))
            var request = AssetRequest(url: url, destinationPath: "a.pdf")
            request.mirrors = try mirror.map { [try #require(URL(string: $0))] } ?? []
            do {
                try await issue.addAsset(request)
                Testing.Issue.record("expected \(text) to be refused")
            } catch {
                #expect(error.code == .invalidRequest)
                #expect(error.message.contains("holds a password"), "\(error.message)")
                #expect(!error.description.contains(password), "\(error.description)")
            }
        }
        // A user name alone is no secret (SFTP logs in with it).
        try await issue.addAsset(AssetRequest(url: URL(string: "mem://carol@example/b")!, destinationPath: "b.pdf"))
        #expect(issue.assets.count == 1)
        await library.close()
        #expect(try storedBytes(under: root).range(of: Data(password.utf8)) == nil, "the password reached the library's files")
    }

    /// Every byte of every file under `folder` (the database, its journal and WAL included).
    func storedBytes(under folder: URL) throws -> Data {
        var all = Data()
        let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey])
        while let file = walker?.nextObject() as? URL {
            if (try? file.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
                all.append(try Data(contentsOf: file))
            }
        }
        return all
    }

    @Test func removeIssueCancelsDownloadsAndRemovesTheFolder() async throws {
        let transport = InMemoryTransport()
        let url = transport.serve(randomData(256 * 1024), at: "slow", script: [.stallAfter(64 * 1024)])
        let done = transport.serve(Data("done".utf8), at: "done")
        let library = try open(transport)
        let issue = try await library.addIssue(name: "gone", date: Date())
        let finished = try await issue.addAsset(AssetRequest(url: done, destinationPath: "done.txt"))
        try await finished.download()
        let asset = try await issue.addAsset(AssetRequest(url: url))
        try await asset.download()
        try await eventually("stall") { asset.totalBytesWritten >= 64 * 1024 }
        try await eventually("delivered") { finished.state == .delivered }
        #expect(FileManager.default.fileExists(atPath: issue.contentURL.appendingPathComponent("done.txt").path))
        try await library.removeIssue(issue)
        #expect(try await library.issue(named: "gone") == nil)
        #expect(!FileManager.default.fileExists(atPath: issue.contentURL.path))
        #expect(library.downloadingAssets.isEmpty)
        let partials = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(".partial").path)
        #expect(partials.isEmpty)
        await library.close()
    }
}

@Suite("Asset identifiers", .timeLimit(.minutes(2)))
struct AssetIdentifierTests {
    @Test func areLowercaseVersion4UUIDsAndDistinct() {
        let identifiers = (0..<2000).map { _ in Issue.newAssetIdentifier() }
        #expect(Set(identifiers).count == identifiers.count)
        for identifier in identifiers.prefix(200) {
            let uuid = UUID(uuidString: identifier)
            #expect(uuid != nil && identifier == identifier.lowercased(), "\(identifier)")
            let characters = Array(identifier)
            #expect(characters[14] == "4", "\(identifier)")  // version
            #expect("89ab".contains(characters[19]), "\(identifier)")  // variant
        }
    }
}

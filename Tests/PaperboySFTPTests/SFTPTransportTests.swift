import Foundation
import Paperboy
import PaperboySFTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Against a real OpenSSH sshd started by each test. Under `CI=true` a missing sshd is a failure.
@Suite("SFTP transport against sshd", .timeLimit(.minutes(3)))
struct SFTPTransportTests {
    /// The test file, made once on a thread of its own: megabytes take a debug build tens of
    /// milliseconds, too long for the cooperative pool (and made by every test at once, even
    /// for a thread each).
    static let made = Task { try await offThePool { randomData(5 << 20 + 4321) } }
    static func makeData() async throws -> Data { try await made.value }

    @Test func downloadsWithAPublicKeyAndReportsSizeAndMtime() async throws {
        let data = try await Self.makeData()
        guard let setup = try await SFTPServerSetup.start() else { return }
        let url = try setup.publish(data, as: "file.bin")
        let sink = RecordingSink(answer: setup.keyAnswer)
        try await setup.transport().transfer(.forTests(url), into: sink)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
        let response = try #require(sink.response)
        #expect(response.offset == 0)
        #expect(response.expectedLength == Int64(data.count))
        let modified = try #require(FileManager.default.attributesOfItem(atPath: setup.server.file("file.bin").path)[.modificationDate] as? Date)
        #expect(response.validator == ResourceValidator("size=\(data.count);mtime=\(Int(modified.timeIntervalSince1970))", strength: .weak))
        #expect(sink.challenges.map(\.kind) == [.sshPublicKey])
        #expect(sink.writeCount >= 3)
    }

    @Test func decodesPercentEscapesAndServesEmptyFiles() async throws {
        guard let setup = try await SFTPServerSetup.start() else { return }
        let url = try setup.publish(Data("hello".utf8), as: "a file é.txt")
        #expect(url.absoluteString.contains("%20"))
        let sink = RecordingSink(answer: setup.keyAnswer)
        try await setup.transport().transfer(.forTests(url), into: sink)
        #expect(Bytes(sink.data) == Bytes(Data("hello".utf8)))

        let empty = RecordingSink(answer: setup.keyAnswer)
        try await setup.transport().transfer(.forTests(try setup.publish(Data(), as: "empty")), into: empty)
        #expect(empty.beginCount == 1)
        #expect(empty.response?.expectedLength == 0)
        #expect(empty.data.isEmpty)
    }

    @Test func asksForThePassphraseOfAnEncryptedKey() async throws {
        let data = try await Self.makeData()
        guard let setup = try await SFTPServerSetup.start() else { return }
        let key = try await setup.makeClientKey(named: "locked_ecdsa", type: "ecdsa", passphrase: "open sesame")
        let url = try setup.publish(data, as: "file.bin")
        let sink = RecordingSink { challenge in
            guard challenge.kind == .sshPublicKey else { return .performDefaultHandling }
            // The first answer (as from a configuration) names the key without its passphrase;
            // the second is asked because it was missing; the third gives it.
            switch challenge.previousFailureCount {
            case 0: return .useCredential(Credential(privateKey: key))
            case 1: return .useCredential(Credential(passphrase: "wrong"))
            default: return .useCredential(Credential(passphrase: "open sesame"))
            }
        }
        try await setup.transport().transfer(.forTests(url), into: sink)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
        #expect(sink.challenges.map(\.previousFailureCount) == [0, 1, 2])
        #expect(sink.challenges.dropFirst().allSatisfy { $0.realm == key.path })
    }

    @Test func authenticatesWithAPassword() async throws {
        let data = try await Self.makeData()
        guard let setup = try await SFTPServerSetup.start() else { return }
        guard let user = await passwordUser() else { return }
        let url = try setup.publish(data, as: "file.bin", user: user.name)
        let sink = RecordingSink { challenge in
            challenge.kind == .sshPassword ? .useCredential(Credential(password: user.password)) : .performDefaultHandling
        }
        try await setup.transport().transfer(.forTests(url), into: sink)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
        // The server offers publickey first: it is asked (and declined) before the password.
        #expect(sink.challenges.map(\.kind) == [.sshPublicKey, .sshPassword])
    }

    @Test func refusesAWrongPasswordAfterBoundedAttempts() async throws {
        let data = try await Self.makeData()
        guard let setup = try await SFTPServerSetup.start() else { return }
        guard let user = await passwordUser() else { return }
        let url = try setup.publish(data, as: "file.bin", user: user.name)
        let sink = RecordingSink { challenge in
            challenge.kind == .sshPassword ? .useCredential(Credential(password: "not-the-password-42")) : .performDefaultHandling
        }
        let error = await transportError { try await setup.transport().transfer(.forTests(url), into: sink) }
        #expect(error?.code == .authenticationFailed)
        #expect(error?.isRetryable == false)
        #expect(error?.description.contains("not-the-password-42") == false)
        #expect(sink.challenges.filter { $0.kind == .sshPassword }.map(\.previousFailureCount) == [0, 1, 2])
        #expect(sink.data.isEmpty && sink.beginCount == 0)
    }

    @Test func withNoCredentialTheErrorSaysWhatEachMethodLacked() async throws {
        let data = try await Self.makeData()
        // keyboard-interactive offered, but sshd without PAM refuses it before asking anything.
        guard let setup = try await SFTPServerSetup.start(extraConfiguration: "KbdInteractiveAuthentication yes\nPasswordAuthentication no")
        else { return }
        let url = try setup.publish(data, as: "file.bin")
        let sink = RecordingSink { _ in .performDefaultHandling }
        let error = await transportError { try await setup.transport().transfer(.forTests(url), into: sink) }
        #expect(error?.code == .authenticationFailed)
        #expect(error?.message.contains("refused authentication by publickey, keyboard-interactive") == true, "\(String(describing: error))")
        #expect(error?.message.contains("publickey: no key file") == true)
        #expect(error?.message.contains("keyboard-interactive: refused without asking anything") == true)
        // Nothing was asked, so no answer was refused, once or three times.
        #expect(sink.challenges.filter { $0.kind == .sshKeyboardInteractive }.isEmpty)
    }

    @Test func refusesAnUnknownHostKeyByDefault() async throws {
        let data = try await Self.makeData()
        guard let setup = try await SFTPServerSetup.start(trusted: false) else { return }
        let url = try setup.publish(data, as: "file.bin")
        let sink = RecordingSink(answer: setup.keyAnswer)
        let error = await transportError { try await setup.transport().transfer(.forTests(url), into: sink) }
        #expect(error?.code == .untrustedServer)
        #expect(error?.isRetryable == false)
        let trust = try #require(sink.challenges.first { $0.kind == .serverTrust }?.serverTrust)
        #expect(trust.reason == .unknownHost)
        #expect(trust.keyType == "ssh-ed25519")
        #expect(trust.host == "127.0.0.1:\(setup.server.port)")
        #expect(trust.fingerprint == (try await hostFingerprint(setup)))
        // Nothing was asked or sent past the host key, and nothing was recorded.
        #expect(!sink.challenges.contains { $0.kind == .sshPublicKey })
        #expect(try String(contentsOf: setup.knownHosts, encoding: .utf8).isEmpty)
        #expect(setup.acceptedLogins == 0)
    }

    @Test func acceptsAnUnknownHostKeyWhenTheChallengeSaysSoAndRecordsIt() async throws {
        let data = try await Self.makeData()
        guard let setup = try await SFTPServerSetup.start(trusted: false) else { return }
        let url = try setup.publish(data, as: "file.bin")
        let keyAnswer = setup.keyAnswer
        let sink = RecordingSink { challenge in
            challenge.kind == .serverTrust ? .useCredential(.trustServer) : keyAnswer(challenge)
        }
        try await setup.transport().transfer(.forTests(url), into: sink)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
        #expect(try String(contentsOf: setup.knownHosts, encoding: .utf8).contains(setup.server.knownHostsLine))

        // A new transport (new connection) now trusts the key without asking.
        let again = RecordingSink(answer: setup.keyAnswer)
        try await setup.transport().transfer(.forTests(url), into: again)
        #expect(!again.challenges.contains { $0.kind == .serverTrust })
    }

    @Test func aCredentialWithoutTrustDoesNotAcceptAHostKey() async throws {
        let data = try await Self.makeData()
        guard let setup = try await SFTPServerSetup.start(trusted: false) else { return }
        let url = try setup.publish(data, as: "file.bin")
        // As the core answers every first challenge from configuration: a key, not trust.
        let key = setup.clientKey
        let sink = RecordingSink { _ in .useCredential(Credential(privateKey: key)) }
        let error = await transportError { try await setup.transport().transfer(.forTests(url), into: sink) }
        #expect(error?.code == .untrustedServer)
    }

    @Test func refusesAChangedHostKey() async throws {
        let data = try await Self.makeData()
        guard let setup = try await SFTPServerSetup.start(trusted: false) else { return }
        let other = setup.folder.file("other_host_key")
        try #require(try await offThePool { try ChildProcess.run(SSHServer.keygen!, ["-q", "-t", "ed25519", "-N", "", "-f", other.path]) }.status == 0)
        let otherKey = try String(contentsOf: other.appendingPathExtension("pub"), encoding: .utf8).split(separator: " ").prefix(2).joined(separator: " ")
        try "[127.0.0.1]:\(setup.server.port) \(otherKey)\n".write(to: setup.knownHosts, atomically: true, encoding: .utf8)

        let url = try setup.publish(data, as: "file.bin")
        let sink = RecordingSink { _ in .useCredential(.trustServer) }
        let error = await transportError { try await setup.transport().transfer(.forTests(url), into: sink) }
        #expect(error?.code == .hostKeyMismatch)
        #expect(error?.isRetryable == false)
        #expect(error?.message.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") == true)
        #expect(error?.message.contains(try await hostFingerprint(setup)) == true)
        #expect(error?.message.contains(setup.knownHosts.path) == true)
        // Never offered as a choice, even to a sink that trusts everything.
        #expect(sink.challenges.isEmpty)
    }

    @Test func matchesHashedKnownHostsEntries() async throws {
        let data = try await Self.makeData()
        guard let setup = try await SFTPServerSetup.start() else { return }
        let knownHosts = setup.knownHosts
        try #require(try await offThePool { try ChildProcess.run(SSHServer.keygen!, ["-H", "-f", knownHosts.path]) }.status == 0)
        #expect(try String(contentsOf: setup.knownHosts, encoding: .utf8).hasPrefix("|1|"))
        let sink = RecordingSink(answer: setup.keyAnswer)
        try await setup.transport().transfer(.forTests(try setup.publish(data, as: "file.bin")), into: sink)
        #expect(!sink.challenges.contains { $0.kind == .serverTrust })
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }

    @Test func missingFileIsNotFound() async throws {
        guard let setup = try await SFTPServerSetup.start() else { return }
        let sink = RecordingSink(answer: setup.keyAnswer)
        let error = await transportError { try await setup.transport().transfer(.forTests(setup.server.url("missing.bin")), into: sink) }
        #expect(error?.code == .notFound)
        #expect(error?.isRetryable == false)
        #expect(sink.beginCount == 0)
    }

    /// Cancelled while its sink holds the file's first MiB (it pushes back until the test is
    /// done): the transfer cannot end first however the machine is paced, and what it kept is
    /// the file's beginning, from which the next transfer resumes.
    @Test func resumesAfterACancelledTransfer() async throws {
        let data = try await Self.makeData()
        guard let setup = try await SFTPServerSetup.start() else { return }
        let url = try setup.publish(data, as: "file.bin")
        let transport = setup.transport()
        let first = HoldingSink(holdingAfter: 1 << 20, answer: setup.keyAnswer)
        defer { first.release() }
        let task = Task { try await transport.transfer(.forTests(url), into: first) }
        try await eventually("the sink to hold 1 MiB", seen: "\(first.data.count) bytes") { first.isHolding }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        let prefix = first.data
        #expect(prefix.count >= 1 << 20 && prefix.count < data.count, "\(prefix.count) of \(data.count) bytes kept")

        let second = RecordingSink(startOffset: Int64(prefix.count), answer: setup.keyAnswer)
        try await transport.transfer(.forTests(url, offset: Int64(prefix.count), validator: first.response?.validator), into: second)
        #expect(second.response?.offset == Int64(prefix.count))
        #expect(sha256Hex(prefix + second.data) == sha256Hex(data))
        // The cancelled transfer's connection served the resumed one.
        #expect(setup.acceptedLogins == 1)
    }

    /// Stopped (as Ctrl-C stops a sync) while the sink holds a write: the transfer ends once
    /// that write is done, without reading the rest of the file, and what reached the sink is the
    /// file's beginning. (That the chunks queued behind it are written too is
    /// SFTPWriteBehindTests' to show, where the queue is seen.)
    @Test func aCancelledTransferStopsAfterTheWriteInProgress() async throws {
        guard let setup = try await SFTPServerSetup.start() else { return }
        let chunk = 64 << 10
        let published = try await offThePool { randomData(32 * chunk, seed: 5) }
        let url = try setup.publish(published, as: "queued.bin")
        let sink = GatedSink(answer: setup.keyAnswer)
        defer { sink.open() }
        let task = Task { try await setup.transport(readSize: chunk).transfer(.forTests(url), into: sink) }
        try await eventually("the sink's first write", seen: "\(sink.calls) writes") { sink.calls > 0 }
        task.cancel()
        sink.open()
        await #expect(throws: CancellationError.self) { try await task.value }
        let kept = sink.data
        #expect(kept.count >= chunk && kept.count < published.count, "\(sink.calls) writes, \(kept.count) bytes reached the sink")
        #expect(sha256Hex(kept) == sha256Hex(published.prefix(kept.count)), "the bytes kept are not the file's first \(kept.count)")
    }

    @Test func aFileChangedBetweenAttemptsRestartsFromZero() async throws {
        let data = try await Self.makeData()
        guard let setup = try await SFTPServerSetup.start() else { return }
        let url = try setup.publish(data, as: "file.bin")
        let transport = setup.transport()
        let first = RecordingSink(answer: setup.keyAnswer)
        try await transport.transfer(.forTests(url), into: first)
        let old = try #require(first.response?.validator)

        let changed = try await offThePool { randomData(data.count + 17, seed: 7) }
        _ = try setup.publish(changed, as: "file.bin")
        let second = RecordingSink(answer: setup.keyAnswer)
        try await transport.transfer(.forTests(url, offset: 1 << 20, validator: old), into: second)
        #expect(second.response?.offset == 0)
        #expect(second.response?.validator != old)
        #expect(sha256Hex(second.data) == sha256Hex(changed))
    }

    @Test func severalAssetsFromOneHostShareOneSession() async throws {
        guard let setup = try await SFTPServerSetup.start() else { return }
        let transport = setup.transport()
        var urls: [URL] = []
        for index in 0..<6 { urls.append(try setup.publish(randomData(700_000 + index, seed: UInt64(index)), as: "part\(index).bin")) }
        // One after the other, then all at once: one SSH connection, one login.
        for url in urls.prefix(2) { try await transport.transfer(.forTests(url), into: RecordingSink(answer: setup.keyAnswer)) }
        let answer = setup.keyAnswer
        let digests = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for (index, url) in urls.enumerated() {
                group.addTask {
                    let sink = RecordingSink(answer: answer)
                    try await transport.transfer(.forTests(url), into: sink)
                    return (index, sha256Hex(sink.data))
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for index in 0..<6 { #expect(digests[index] == sha256Hex(randomData(700_000 + index, seed: UInt64(index)))) }
        #expect(setup.acceptedLogins == 1)
    }

    @Test func aDroppedConnectionIsRetryableAndTheNextTransferReconnects() async throws {
        let data = try await Self.makeData()
        guard let setup = try await SFTPServerSetup.start() else { return }
        let url = try setup.publish(data, as: "file.bin")
        // Small reads: what is read ahead (three buffers and libssh2's queue) stays well below the file.
        let transport = setup.transport(readSize: 256 << 10)
        // Held after 1 MiB until the connection is dropped: the bytes that still arrive were
        // asked for before the drop (the write-behind's buffers, libssh2's requests in flight),
        // about 3 MiB at most, so the rest of the file cannot, however the machine is paced.
        let sink = HoldingSink(holdingAfter: 1 << 20, answer: setup.keyAnswer)
        defer { sink.release() }
        let task = Task { try await transport.transfer(.forTests(url), into: sink) }
        try await eventually("the sink to hold 1 MiB", seen: "\(sink.data.count) bytes") { sink.isHolding }
        setup.server.dropConnections()
        sink.release()
        let error = await transportError { try await task.value }
        #expect(error?.isRetryable == true)
        #expect([.connectionLost, .timedOut].contains(error?.code))
        #expect(sink.data.count >= 1 << 20 && sink.data.count < data.count, "\(sink.data.count) of \(data.count) bytes reached the sink")

        let again = RecordingSink(startOffset: Int64(sink.data.count), answer: setup.keyAnswer)
        try await transport.transfer(.forTests(url, offset: Int64(sink.data.count), validator: sink.response?.validator), into: again)
        #expect(sha256Hex(sink.data + again.data) == sha256Hex(data))
        #expect(setup.acceptedLogins == 2)
    }

    @Test func downloadsThroughALibraryWithConfiguredCredentials() async throws {
        let data = try await Self.makeData()
        guard let setup = try await SFTPServerSetup.start() else { return }
        let url = try setup.publish(data, as: "file.bin")
        let library = try Library.open(at: setup.folder.file("library"), transports: TransportRegistry([setup.transport()]),
                                       configuration: setup.configuration())
        let asset = try await library.addIssue(name: "issue", date: Date()).addAsset(AssetRequest(url: url, sha256: sha256Hex(data)))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        await library.close()
        #expect(delegate.keptFiles.count == 1)
        #expect(delegate.keptFiles.first.map(sha256Hex) == sha256Hex(data))
    }

    /// A server whose file is larger than the free space (a sparse terabyte here) fails the
    /// asset before its first byte with `insufficient-storage`, as every transport does: the size
    /// the server reports is the length the core's sink checks against the free-space floor.
    @Test func aFileLargerThanTheFreeSpaceFailsBeforeItsFirstByte() async throws {
        guard let setup = try await SFTPServerSetup.start() else { return }
        let url = try setup.publish(Data(), as: "huge.bin")
        let handle = try FileHandle(forWritingTo: setup.server.file("huge.bin"))
        try handle.truncate(atOffset: 1 << 40)
        try handle.close()
        let library = try Library.open(at: setup.folder.file("library"), transports: TransportRegistry([setup.transport()]),
                                       configuration: setup.configuration())
        let asset = try await library.addIssue(name: "issue", date: Date()).addAsset(AssetRequest(url: url))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        let state = asset.state
        let partial = (try? FileManager.default.attributesOfItem(atPath: setup.folder.file("library/.partial/\(asset.identifier)").path))?[.size] as? Int64
        await library.close()
        guard case .failed(let message) = state else {
            Testing.Issue.record("expected a failure, got \(state)")
            return
        }
        #expect(message.contains("not enough space for \(url.absoluteString) (writing "), "\(message)")
        #expect(message.contains("(min_free_space)"), "\(message)")
        #expect(delegate.events.compactMap { if case .failed(let code, _) = $0 { code } else { nil } } == ["insufficient-storage"])
        #expect((partial ?? 0) == 0)
    }

    /// The SHA256 fingerprint of the server's host key, as ssh-keygen prints it.
    func hostFingerprint(_ setup: SFTPServerSetup) async throws -> String {
        let key = setup.server.folder.appendingPathComponent("host_key.pub").path
        let output = try await offThePool { try ChildProcess.run(SSHServer.keygen!, ["-l", "-E", "sha256", "-f", key]) }.output
        return String(output.split(separator: " ")[1])
    }

    /// A local user with a password for sshd, or nil (skipping; a failure under CI) when it
    /// cannot be created (not root).
    func passwordUser(sourceLocation: SourceLocation = #_sourceLocation) async -> (name: String, password: String)? {
        let user = (name: "paperboy-sftp", password: "Correct-Horse-7")
        // useradd and chpasswd run off the cooperative pool.
        if (try? await offThePool { SSHServer.ensurePasswordUser(name: user.name, password: user.password) }) == true { return user }
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            Testing.Issue.record("cannot create the password test user '\(user.name)': run the tests as root on CI", sourceLocation: sourceLocation)
        } else {
            print("skipping SFTP password test: not root, cannot create the user '\(user.name)'")
        }
        return nil
    }
}

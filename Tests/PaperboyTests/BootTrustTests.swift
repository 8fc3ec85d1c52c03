import Foundation
import GRDB
import Synchronization
import Testing
@testable import Paperboy
import PaperboyTesting

/// A partial file longer than its last checkpoint: trusted to its length in the boot that
/// recorded the checkpoint (a process crash loses no byte `write(2)` took), cut back to the
/// checkpoint after a reboot, and never trusted once bytes were written out of order.
@Suite("Partial files trusted by boot", .timeLimit(.minutes(2)))
struct BootTrustTests {
    let folder = TempFolder()
    var root: URL { folder.file("library") }

    func configuration(boot: String?) -> Library.Configuration {
        var configuration = Library.Configuration.forTests()
        configuration.resumesOnOpen = false
        configuration.bootIdentity = { boot }
        return configuration
    }

    /// An asset interrupted at a checkpoint of 1,000 bytes recorded in `checkpointBoot`, with
    /// `onDisk` bytes in its partial file; reopened in boot `boot`. Returns the bytes the
    /// reopened library continues from, as it reports them and in the database.
    func reopen(checkpointBoot: String?, expected: Int64 = 5_000, onDisk: Int = 3_000, boot: String?) async throws -> (memory: Int64, stored: Int64) {
        var library = try Library.open(at: root, transports: TransportRegistry([InMemoryTransport()]), configuration: configuration(boot: "boot-a"))
        let issue = try await library.addIssue(name: "i-\(UUID().uuidString)", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: URL(fileURLWithPath: "/nowhere/a"), destinationPath: "a"))
        try await library.scheduler.store.pool.write { db in
            try db.execute(sql: """
                UPDATE asset SET state = 'downloading', bytesOnDisk = 1000, expectedBytes = ?, validator = 'v1',
                  validatorStrength = 'strong', checkpointBoot = ? WHERE id = ?
                """, arguments: [expected, checkpointBoot, asset.identifier])
        }
        await library.close()
        let partial = LibraryLayout(root: root).partialURL(asset: asset.identifier)
        try Data(repeating: 7, count: onDisk).write(to: partial)

        library = try Library.open(at: root, transports: TransportRegistry([InMemoryTransport()]), configuration: configuration(boot: boot))
        // A paused asset is in the store only: what the library reports is read from there.
        let memory = try await library.asset(identifier: asset.identifier)?.totalBytesWritten ?? -1
        library.scheduler.store.flush()
        let stored = try await library.scheduler.store.pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT bytesOnDisk FROM asset WHERE id = ?", arguments: [asset.identifier])
        } ?? -1
        #expect(try Data(contentsOf: partial).count == onDisk, "the partial file itself is left as it is")
        await library.close()
        return (memory, stored)
    }

    /// Reads the committed `checkpointBoot` of an asset.
    static func committedBoot(in library: Library) -> @Sendable (String) -> String? {
        let store = library.scheduler.store
        return { id in
            (try? store.pool.read { db in
                try String?.fetchOne(db, sql: "SELECT checkpointBoot FROM asset WHERE id = ?", arguments: [id])
            }) ?? nil
        }
    }

    @Test func inTheSameBootThePartialFileIsTrustedToItsLength() async throws {
        let resumed = try await reopen(checkpointBoot: "boot-a", boot: "boot-a")
        #expect(resumed.memory == 3_000)
        #expect(resumed.stored == 3_000)
    }

    @Test func afterARebootOnlyTheDurableCheckpointIsTrusted() async throws {
        let resumed = try await reopen(checkpointBoot: "boot-a", boot: "boot-b")
        #expect(resumed.memory == 1_000)
        #expect(resumed.stored == 1_000)
    }

    @Test func anUnknownBootTrustsOnlyTheCheckpoint() async throws {
        #expect(try await reopen(checkpointBoot: "boot-a", boot: nil).memory == 1_000)
        #expect(try await reopen(checkpointBoot: nil, boot: "boot-a").memory == 1_000)
    }

    @Test func aFileLongerThanTheSourceAnnouncedIsNotTrusted() async throws {
        let resumed = try await reopen(checkpointBoot: "boot-a", expected: 2_000, boot: "boot-a")
        #expect(resumed.memory == 1_000)
    }

    @Test func theBootIdentifierComesFromTheKernelOrTheEnvironment() {
        #expect(BootIdentity.current(environment: ["PAPERBOY_BOOT_ID": " test-boot\n"]) == "test-boot")
        #expect(BootIdentity.current(environment: ["PAPERBOY_BOOT_ID": ""]) == nil)
        #if os(Linux)
        let kernel = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)
        #expect(BootIdentity.current(environment: [:]) == kernel?.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(BootIdentity.current(environment: [:]) != nil)
        #endif
    }

    /// Checkpoints of bytes written in order carry the boot; the first segment withdraws it, in
    /// the database, before any byte lands out of order.
    @Test func aSegmentWithdrawsTheBootBeforeItsFirstByte() async throws {
        let data = randomData(400_000)
        let transport = BootProbingTransport(data)
        var configuration = configuration(boot: "boot-a")
        configuration.resumesOnOpen = true
        configuration.checkpointInterval = .zero
        let library = try Library.open(at: root, transports: TransportRegistry([transport]), configuration: configuration)
        transport.committedBoot.withLock { $0 = Self.committedBoot(in: library) }
        let issue = try await library.addIssue(name: "seg", date: Date())
        let delegate = RecordingDelegate()
        try await issue.addAsset(AssetRequest(url: URL(string: "probe://host/file")!)).download(delegate: delegate)
        await delegate.waitForEnd()
        #expect(delegate.keptFiles == [data])
        let seen = transport.seen.withLock { $0 }
        #expect(seen.inOrder == "boot-a", "a checkpoint of in-order bytes records the boot")
        #expect(seen.afterSegment == .some(nil), "the boot is withdrawn before a segment writes")
        await library.close()
    }
}

extension BootTrustTests {
    @Test func aSegmentIsDeclinedWhenTheDatabaseCannotWithdrawTheBoot() async throws {
        let data = randomData(200_000)
        let transport = SegmentAskingTransport(data)
        var configuration = configuration(boot: "boot-a")
        configuration.checkpointInterval = .zero
        let library = try Library.open(at: root, transports: TransportRegistry([transport]), configuration: configuration)
        // The database refuses exactly the update that withdraws the boot.
        try await library.scheduler.store.pool.write { db in
            try db.execute(sql: """
                CREATE TRIGGER refuse_withdrawal BEFORE UPDATE OF checkpointBoot ON asset
                WHEN NEW.checkpointBoot IS NULL AND OLD.checkpointBoot IS NOT NULL
                BEGIN SELECT RAISE(ABORT, 'injected: disk I/O error'); END
                """)
        }
        transport.committedBoot.withLock { $0 = Self.committedBoot(in: library) }
        let issue = try await library.addIssue(name: "seg", date: Date())
        let delegate = RecordingDelegate()
        try await issue.addAsset(AssetRequest(url: URL(string: "probe://host/file")!)).download(delegate: delegate)
        await delegate.waitForEnd()
        // No byte landed out of order while the database still trusted the file's length.
        #expect(transport.segmentGranted.withLock { $0 } == false)
        #expect(delegate.keptFiles == [data])
        await library.close()
    }
}

/// Writes half a resource in order, waits for a checkpoint to carry the boot, asks for a
/// segment for the rest, and writes the rest in order when the sink declines it.
final class SegmentAskingTransport: Transport, @unchecked Sendable {
    let data: Data
    let segmentGranted = Mutex<Bool?>(nil)
    /// Reads the committed `checkpointBoot` of an asset.
    let committedBoot = Mutex<@Sendable (String) -> String?>({ _ in nil })

    init(_ data: Data) { self.data = data }

    var schemes: Set<String> { ["probe"] }
    var capabilities: TransportCapabilities { [.resume, .validators] }

    func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        try sink.begin(TransferResponse(offset: 0, expectedLength: Int64(data.count), validator: ResourceValidator("v1", strength: .strong)))
        let middle = data.count / 2
        for start in stride(from: 0, to: middle, by: 10_000) {
            #expect(try data[start..<min(start + 10_000, middle)].withUnsafeBytes { try sink.tryWrite($0) })
        }
        // The boot recorded, so that the segment has a trust to withdraw.
        let probe = committedBoot.withLock { $0 }
        try await eventually("a checkpoint with the boot committed") { probe(job.assetIdentifier) != nil }
        let segment = try sink.segment(Int64(middle)..<Int64(data.count))
        segmentGranted.withLock { $0 = segment != nil }
        if let segment {
            #expect(try data[middle...].withUnsafeBytes { try segment.tryWrite($0) })
        } else {
            #expect(try data[middle...].withUnsafeBytes { try sink.tryWrite($0) })
        }
    }
}

/// Writes half a resource in order, waits for a checkpoint to carry the boot, then writes the
/// other half through a segment, noting what the database said at each step.
final class BootProbingTransport: Transport, @unchecked Sendable {
    let data: Data
    /// Reads the committed `checkpointBoot` of an asset.
    let committedBoot = Mutex<@Sendable (String) -> String?>({ _ in nil })
    let seen = Mutex<(inOrder: String?, afterSegment: String??)>((nil, nil))

    init(_ data: Data) { self.data = data }

    var schemes: Set<String> { ["probe"] }
    var capabilities: TransportCapabilities { [.resume, .validators] }

    func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        let validator = ResourceValidator("v1", strength: .strong)
        try sink.begin(TransferResponse(offset: 0, expectedLength: Int64(data.count), validator: validator))
        let middle = data.count / 2
        let id = job.assetIdentifier
        let probe = committedBoot.withLock { $0 }
        // A write takes a checkpoint (the interval is zero), which records the boot.
        try await sink.write(data[0..<1_000])
        let position = 1_000
        try await eventually("a checkpoint with the boot committed") { probe(id) != nil }
        seen.withLock { $0.inOrder = probe(id) }
        guard let segment = try sink.segment(Int64(middle)..<Int64(data.count)) else { return }
        seen.withLock { $0.afterSegment = .some(probe(id)) }
        // No bandwidth limit: every write is taken at once.
        #expect(try data[middle...].withUnsafeBytes { try segment.tryWrite($0) })
        try await sink.write(data[position..<middle])
    }
}

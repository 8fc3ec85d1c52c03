import Foundation
import Paperboy
import PaperboyTesting
import Testing

/// Two versions of a file for indexed-asset tests (docs/ChunkIndex.md), made once per test
/// process: version 1 (4 MiB and a tail) and version 2, version 1 with two 64 KiB regions
/// rewritten.
public enum IndexedVersions {
    /// Version 1 and version 2.
    public static let made = Task { try await offThePool { () -> (Data, Data) in
        let v1 = randomData(4 << 20 + 777)
        var v2 = v1
        let patch = randomData(128 << 10)
        v2.replaceSubrange(1_000_000..<1_000_000 + (64 << 10), with: patch.prefix(64 << 10))
        v2.replaceSubrange(3_000_000..<3_000_000 + (64 << 10), with: patch.suffix(64 << 10))
        return (v1, v2)
    } }

    /// The bytes the changed regions can cost: each region and a largest chunk on each side.
    public static let changedBound = 2 * (64 << 10 + 2 * (128 << 10))

    /// The chunk index of `data`, encoded as `paperboy index` writes it.
    public static func index(of data: Data) throws -> Data {
        let folder = TempFolder()
        let file = folder.file("f")
        try data.write(to: file)
        return try ChunkIndex.make(ofFileAt: file).encoded()
    }

    /// Version 1 delivered to `mag.pdf`, then version 2 with its index (`pub/v1.bin`,
    /// `pub/v2.bin` and `pub/v2.bin.pbidx` written under `root`, fetched from `url(name)`), in a
    /// library under `root` with `configuration`, through `transport`; returns version 2's outcome, the bytes
    /// delivered, and its status.
    public static func correct(through transport: any Transport, root: URL,
                               configuration: Library.Configuration = .forTests(attempts: 1), url: (String) -> URL) async throws
        -> (outcome: AssetOutcome, delivered: Data?, status: AssetStatus?) {
        let (v1, v2) = try await made.value
        let encodedIndex = try await offThePool { try index(of: v2) }
        let served = root.appendingPathComponent("pub")
        try FileManager.default.createDirectory(at: served, withIntermediateDirectories: true)
        try v1.write(to: served.appendingPathComponent("v1.bin"))
        try v2.write(to: served.appendingPathComponent("v2.bin"))
        try encodedIndex.write(to: served.appendingPathComponent("v2.bin.pbidx"))

        let library = try Library.open(at: root.appendingPathComponent("library"), transports: TransportRegistry([transport]),
                                       configuration: configuration)
        let issue = try await library.addIssue(name: "issue", date: Date())
        let first = try await issue.addAsset(AssetRequest(url: url("v1.bin"), sha256: sha256Hex(v1), destinationPath: "mag.pdf"))
        try await first.download()
        #expect(try await first.waitUntilFinished() == .delivered)

        var request = AssetRequest(url: url("v2.bin"), sha256: sha256Hex(v2), destinationPath: "mag.pdf")
        request.index = url("v2.bin.pbidx")
        let second = try await issue.addAsset(request)
        try await second.download()
        let outcome = try await second.waitUntilFinished()
        let status = try issue.assetStatuses.first { $0.request.url == request.url }
        await library.close()
        let delivered = try? Data(contentsOf: root.appendingPathComponent("library/Issues/issue/mag.pdf"))
        return (outcome, delivered, status)
    }
}

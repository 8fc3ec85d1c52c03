import Foundation
import Testing
@testable import Paperboy
import PaperboyTestServers
import PaperboyTesting

/// Archives that would expand beyond the limits or the disk: refused before writing (declared
/// sizes) or stopped while writing (an entry inflating past its declared size).
extension ShelfTests {
    /// Delivers `archive` and returns the failure message, checking that nothing of it stayed.
    func refusal(of archive: Data, configuration: Library.Configuration = Library.Configuration.forTests()) async throws -> String? {
        let (library, issue, asset) = try await deliver(archive, configuration: configuration)
        defer { Task { await library.close() } }
        guard case .failed(let message) = asset.state else {
            Testing.Issue.record("expected a failure, got \(asset.state)")
            return nil
        }
        #expect(contents(issue.contentURL).isEmpty, "left \(contents(issue.contentURL))")
        await library.close()
        return message
    }

    @Test func anArchiveDeclaringMoreThanTheLimitIsRefusedBeforeWriting() async throws {
        // Six entries of a few bytes each declare 4 GiB: 24 GiB, above the 20 GiB default.
        let items = (1...6).map { ZipItem.file("part\($0).bin", Data("small".utf8)) }
        let message = try #require(try await refusal(of: declaring(.max, in: try zip(items))))
        #expect(message.hasPrefix("archive mem://example/issue.zip declares "), "\(message)")
        #expect(message.contains("declares 25769803770 bytes (25769.8 MB) unpacked"), "\(message)")
        #expect(message.contains("the limit for one archive is 21474836480 bytes"), "\(message)")
    }

    @Test func aConfiguredLimitIsApplied() async throws {
        var configuration = Library.Configuration.forTests()
        configuration.maxUnpackedBytes = 1 << 20
        let message = try #require(try await refusal(of: try zip([.file("a.bin", randomData(2 << 20))]), configuration: configuration))
        #expect(message.contains("declares 2097152 bytes (2.1 MB) unpacked; the limit for one archive is 1048576 bytes"), "\(message)")
    }

    @Test func aRatioBombIsRefusedBeforeWriting() async throws {
        // 8 MiB of zeros deflate to about 8 KiB: a ratio of about 1,000, above the default 200.
        let archive = try zip([.file("zeros.bin", Data(count: 8 << 20))])
        #expect(archive.count < 64 << 10)
        let message = try #require(try await refusal(of: archive))
        #expect(message.contains("declares 8388608 bytes (8.4 MB) unpacked from \(archive.count) bytes, more than the limit of 200 times its size"), "\(message)")
    }

    @Test func anEntryInflatingPastItsDeclaredSizeIsStopped() async throws {
        // The headers say 1,000 bytes; the data inflates to 1 MiB (its CRC-32 is right).
        let archive = declaring(1_000, in: try zip([.file("ok.txt", Data("ok".utf8)), .file("liar.bin", Data(count: 1 << 20))]))
        let message = try #require(try await refusal(of: archive))
        #expect(message.contains("archive entry 'liar.bin' of "), "\(message)")
        #expect(message.contains("inflates past its declared 1000 bytes"), "\(message)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(".inbox").path).isEmpty)
    }

    /// Found by the archive fuzz target: an entry whose local header's extra field puts its data
    /// past the file's end. ZIPFoundation's read loop got empty chunks there and never ended.
    @Test(.timeLimit(.minutes(1)))
    func anEntryWhoseDataEndsPastTheFileIsRefused() async throws {
        var bytes = [UInt8](try zip([.file("a.txt", Data("hello, reader".utf8))]))
        // The local header's extra field length (bytes 28 and 29): 65,535.
        bytes[28] = 0xFF
        bytes[29] = 0xFF
        let message = try #require(try await refusal(of: Data(bytes)))
        #expect(message.contains("is not a readable zip archive") && message.contains("end past the file's \(bytes.count) bytes"), "\(message)")
    }

    @Test func anArchiveLargerThanTheFreeSpaceIsRefusedBeforeWriting() async throws {
        // Limits lifted: only the free space of the library's file system stands in the way.
        // Entries of a few bytes, each declaring 4 GiB, enough of them to exceed what is free.
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        guard let free = POSIX.fileSystemSpace(root.path)?.available else {
            Testing.Issue.record("the temporary folder's file system reports no size")
            return
        }
        let count = Int(free / Int64(UInt32.max)) + 2
        var configuration = Library.Configuration.forTests()
        configuration.maxUnpackedBytes = .max
        configuration.maxUnpackRatio = .max
        let items = (1...count).map { ZipItem.file("part\($0).bin", Data("small".utf8)) }
        let message = try #require(try await refusal(of: declaring(.max, in: try zip(items)), configuration: configuration))
        #expect(message.contains("not enough space for archive "), "\(message)")
        #expect(message.contains("(unpacking \(Int64(count) * Int64(UInt32.max)) bytes"), "\(message)")
        #expect(message.contains("MB free on the file system of \(root.path)"), "\(message)")
        #expect(message.contains("(min_free_space)"), "\(message)")
    }
}

extension ShelfTests {
    @Test func anArchiveOfMoreThanTheEntryLimitIsRefused() async throws {
        // 100,001 empty entries (ZIP64, written by python3's zipfile: ZIPFoundation rewrites its
        // central directory for every entry added).
        let file = folder.file("many.zip")
        let script = """
            import sys, zipfile
            with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_STORED) as z:
                for i in range(100001): z.writestr('e%d' % i, b'')
            """
        let python = try await offThePool { try ChildProcess.run("/usr/bin/python3", ["-c", script, file.path]) }
        #expect(python.status == 0)
        let message = try #require(try await refusal(of: Data(contentsOf: file)))
        #expect(message.contains("has more than 100000 entries, the limit"), "\(message)")
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
@testable import Paperboy
import PaperboyTesting
import Testing

/// ``RangeCopier`` on real file systems: whatever means it uses (or is left), the destination
/// ends with exactly the source's bytes. This machine's /tmp (ext4) and /dev/shm (tmpfs) have
/// no clones, so these runs take the fallbacks (the clone refused, then `copy_file_range`, or a
/// read and a write); docs/Benchmarks.md measures real clones on XFS.
@Suite("range copier")
struct RangeCopierTests {
    /// Folders on two file systems.
    enum Place: String, CaseIterable, CustomTestStringConvertible {
        case temporary = "/tmp"
        case memory = "/dev/shm"

        var testDescription: String { rawValue }
        var isThere: Bool { FileManager.default.fileExists(atPath: rawValue) }
    }

    /// The means a copier is given: all, no clone, neither clone nor copy in the kernel.
    static let means: [RangeCopier.Methods] = [.all, .inKernel, []]

    /// Runs copied: at the same offset to the source's end, at a distance of whole blocks with
    /// unaligned edges, at a distance that is not whole blocks, and one of a few bytes.
    static let runs: [(source: Int64, destination: Int64, length: Int64)] = [
        (40_960, 40_960, 3 << 20 + 777 - 40_960),
        (4096 * 3 + 100, 4096 + 100, 1 << 20),
        (5000, 10_000, 300_000),
        (1, 0, 3),
    ]

    /// A file of `count` bytes in `folder`, open for reading and writing.
    func file(_ name: String, _ data: Data, in folder: TempFolder) throws -> Int32 {
        let url = folder.file(name)
        try data.write(to: url)
        let fd = open(url.path, O_RDWR | O_CLOEXEC)
        #expect(fd >= 0, "cannot open \(url.path)")
        return fd
    }

    @Test(arguments: Place.allCases, [0, 1, 2])
    func theDestinationGetsTheSourcesBytesWhateverTheMeans(_ place: Place, _ means: Int) throws {
        try #require(place.isThere, "\(place.rawValue) does not exist here")
        let folder = TempFolder(prefix: "paperboy-copier", in: URL(fileURLWithPath: place.rawValue))
        let data = randomData(3 << 20 + 777, seed: 7)
        let source = try file("source", data, in: folder)
        defer { close(source) }
        var copier = RangeCopier(methods: Self.means[means])
        for run in Self.runs {
            // The destination holds what precedes the run, as a partial file does.
            let before = randomData(Int(run.destination), seed: 8)
            let destination = try file("destination", before, in: folder)
            defer { close(destination) }
            let outcome = copier.copy(from: source, at: run.source, to: destination, at: run.destination, length: run.length)
            let shown = "\(run) with \(Self.means[means]) in \(place.rawValue): \(outcome.tally)"
            #expect(outcome.failure == nil, "\(shown)")
            #expect(outcome.tally.total == run.length, "\(shown)")
            if !Self.means[means].contains(.clone) { #expect(outcome.tally.cloned == 0, "\(shown)") }
            if Self.means[means].isEmpty { #expect(outcome.tally.copied == run.length, "\(shown)") }
            let copied = try Data(contentsOf: folder.file("destination"))
            #expect(copied == before + data[Int(run.source)..<Int(run.source + run.length)], "\(shown)")
        }
    }

    /// Where `PAPERBOY_CLONE_FOLDER` names a folder on a file system with clones (XFS made with
    /// `reflink=1`, Btrfs), each run's part that ``ClonePlan`` clones is cloned there. Run by hand
    /// (as root, on a loop-mounted image); the suite does not depend on such a file system.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["PAPERBOY_CLONE_FOLDER"] != nil, "PAPERBOY_CLONE_FOLDER names a folder with clones"))
    func runsAreClonedWhereTheFileSystemHasClones() throws {
        let parent = try #require(ProcessInfo.processInfo.environment["PAPERBOY_CLONE_FOLDER"])
        let folder = TempFolder(prefix: "paperboy-copier", in: URL(fileURLWithPath: parent))
        let data = randomData(3 << 20 + 777, seed: 7)
        let source = try file("source", data, in: folder)
        defer { close(source) }
        var copier = RangeCopier()
        for run in Self.runs {
            let before = randomData(Int(run.destination), seed: 8)
            let destination = try file("destination", before, in: folder)
            defer { close(destination) }
            let pieces = ClonePlan.pieces(source: run.source, destination: run.destination, length: run.length,
                                          blockSize: RangeCopier.blockSize(of: destination), sourceSize: Int64(data.count), destinationSize: run.destination)
            let outcome = copier.copy(from: source, at: run.source, to: destination, at: run.destination, length: run.length)
            let shown = "\(run) in \(parent): \(outcome.tally), planned \(pieces)"
            #expect(outcome.tally.cloned == pieces.filter { $0.method == .clone }.map(\.length).reduce(0, +), "\(shown)")
            #expect(outcome.tally.total == run.length, "\(shown)")
            #expect(try Data(contentsOf: folder.file("destination")) == before + data[Int(run.source)..<Int(run.source + run.length)], "\(shown)")
        }
        // The first run (the same offsets to the source's end) was cloned whole.
        #expect(copier.methods.contains(.clone))
    }

    @Test(arguments: [0, 1, 2])
    func aSourceThatEndsFirstCopiesWhatItHas(_ means: Int) throws {
        let folder = TempFolder(prefix: "paperboy-copier")
        let data = randomData(100_000, seed: 9)
        let source = try file("source", data, in: folder)
        defer { close(source) }
        let destination = try file("destination", Data(), in: folder)
        defer { close(destination) }
        var copier = RangeCopier(methods: Self.means[means])
        let outcome = copier.copy(from: source, at: 90_000, to: destination, at: 0, length: 50_000)
        #expect(outcome.failure == nil)
        #expect(outcome.tally.total == 10_000, "\(outcome.tally)")
        #expect(try Data(contentsOf: folder.file("destination")) == data[90_000...])
    }
}

import Foundation
import ZIPFoundation

/// How a delivered archive is processed.
public enum UnpackFormat: String, Sendable, Hashable, Codable {
    /// A zip archive, extracted into the issue folder.
    case zip
}

/// Extracts archives into an issue folder, confined to it and bounded in size.
///
/// The whole archive is checked before anything is written (``ArchivePlan``): entry paths, link
/// targets resolved against the archive's own entries, and the declared unpacked size against
/// the limits and the library's free-space floor (``FreeSpaceGuard``). While writing, no entry
/// may inflate past its declared size, so the checked sum bounds what is written whatever the
/// headers claim, and every chunk is claimed from the floor as it is written. Extraction goes to a
/// staging folder inside the issue folder and is moved into place only when every entry
/// succeeded: a refused or damaged archive leaves nothing behind.
enum Unpacker {
    /// What one archive may unpack to; see ``Library/Configuration/maxUnpackedBytes``.
    struct Limits: Sendable {
        var maxBytes: Int64 = Library.Configuration.defaultMaxUnpackedBytes
        var maxRatio: Int = Library.Configuration.defaultMaxUnpackRatio
    }

    /// Archives declaring at most this much are not refused for their ratio: a small archive of
    /// repetitive text may exceed any ratio, and cannot fill a disk.
    static let ratioFloor: Int64 = 1 << 20
    /// Bytes read and written at a time per entry.
    static let chunkSize = 256 << 10

    /// Extracts the zip archive at `archiveURL` into `folder`, through `staging`.
    ///
    /// - Parameters:
    ///   - name: how messages name the archive (its URL).
    ///   - space: the library's free-space floor, asked before and while writing.
    /// - Throws: ``LibraryError`` `.invalidPath` for an entry or link that would leave the folder,
    ///   `.invalidRequest` for an unreadable, damaged or oversized archive, `.insufficientStorage`
    ///   when writing it would go below the floor or the file system is full, `.storage` when it
    ///   refuses a write otherwise. Never retryable.
    static func unzip(_ archiveURL: URL, named name: String, into folder: URL, staging: URL,
                      limits: Limits = Limits(), space: FreeSpaceGuard) throws(LibraryError) {
        do {
            let archive: Archive
            do {
                archive = try Archive(url: archiveURL, accessMode: .read)
            } catch {
                throw LibraryError(.invalidRequest, "\(name) is not a readable zip archive: \(error)")
            }
            // Every entry's data inside the file: ZIPFoundation's reads never end past it.
            try ZipDataRanges.check(archiveURL, named: name)
            let plan = try ArchivePlan(archive, name: name)
            try checkSize(plan.declaredBytes, of: archiveURL, named: name, in: folder, limits: limits, space: space)
            // A staging folder left by a killed run is stale: start afresh, never through a link.
            try? FileManager.default.removeItem(at: staging)
            guard mkdir(staging.path, 0o700) == 0 else {
                throw LibraryError(.storage, SystemFailure.message("cannot create folder", staging.path))
            }
            defer { try? FileManager.default.removeItem(at: staging) }
            for entry in plan.entries {
                let target = staging.appendingPathComponent(entry.path)
                switch entry.entry.type {
                case .directory:
                    try POSIX.makeDirectory(target)
                case .file:
                    try POSIX.makeDirectory(target.deletingLastPathComponent())
                    try extractFile(entry.entry, declared: entry.declaredBytes, from: archive, to: target, archiveName: name, space: space)
                case .symlink:
                    break
                }
            }
            for link in plan.links {
                let url = staging.appendingPathComponent(link.path)
                try POSIX.makeDirectory(url.deletingLastPathComponent())
                try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: link.target)
                // The plan resolved every link against the archive; the file system must agree.
                guard let real = POSIX.realPath(url), let root = POSIX.realPath(staging),
                      real == root || real.hasPrefix(root + "/") else {
                    throw LibraryError(.invalidPath, "archive link '\(link.path)' of \(name) leads outside the issue folder; refusing the whole archive")
                }
            }
            // Everything extracted: move it into place.
            for entryName in try FileManager.default.contentsOfDirectory(atPath: staging.path) {
                let destination = folder.appendingPathComponent(entryName)
                if FileManager.default.fileExists(atPath: destination.path) || isLink(destination) {
                    try FileManager.default.removeItem(at: destination)
                }
                try FileManager.default.moveItem(at: staging.appendingPathComponent(entryName), to: destination)
            }
        } catch let error as LibraryError {
            throw error
        } catch {
            throw LibraryError(.storage, "cannot unpack \(name): \(error)", underlying: SendableError(error))
        }
    }

    /// Refuses an archive whose declared unpacked size is above the limit, the ratio to its own
    /// size, or what the library's free-space floor lets it write.
    static func checkSize(_ declared: Int64, of archiveURL: URL, named name: String, in folder: URL,
                          limits: Limits, space: FreeSpaceGuard) throws(LibraryError) {
        let size = bytes(declared)
        if declared > limits.maxBytes {
            throw LibraryError(.invalidRequest, "archive \(name) declares \(size) unpacked; the limit for one archive is \(bytes(limits.maxBytes))")
        }
        var info = stat()
        let archiveBytes = stat(archiveURL.path, &info) == 0 ? max(Int64(info.st_size), 1) : 1
        let (allowed, overflow) = archiveBytes.multipliedReportingOverflow(by: Int64(max(limits.maxRatio, 1)))
        if declared > ratioFloor, !overflow, declared > allowed {
            throw LibraryError(.invalidRequest, "archive \(name) declares \(size) unpacked from \(archiveBytes) bytes, more than the limit of \(limits.maxRatio) times its size")
        }
        try space.check(declared, for: "archive \(name) (unpacking \(size) into \(folder.path))")
    }

    /// `count` bytes, with megabytes from 1 MB on: `2000 bytes`, `4294967295 bytes (4295.0 MB)`.
    private static func bytes(_ count: Int64) -> String {
        count < 1_000_000 ? "\(count) bytes" : "\(count) bytes (\(FreeSpaceGuard.megabytes(count)))"
    }

    /// Writes one file entry, stopping it as soon as it inflates past `declared` bytes.
    private static func extractFile(_ entry: Entry, declared: Int64, from archive: Archive, to url: URL,
                                    archiveName: String, space: FreeSpaceGuard) throws(LibraryError) {
        // Library files are private to the user, whatever modes the archive carries.
        let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw LibraryError(.storage, "cannot create \(url.path) for archive entry '\(entry.path)': \(SystemFailure.reason())")
        }
        defer { POSIX.closeFile(fd) }
        var written: Int64 = 0
        let checksum: CRC32
        do {
            checksum = try archive.extract(entry, bufferSize: chunkSize) { chunk in
                written += Int64(chunk.count)
                guard written <= declared else {
                    throw LibraryError(.invalidRequest, "archive entry '\(entry.path)' of \(archiveName) inflates past its declared \(declared) bytes; refusing the whole archive")
                }
                try space.claim(Int64(chunk.count), for: "archive \(archiveName) (writing \(url.path))")
                if let code = chunk.withUnsafeBytes({ POSIX.writeAll(fd, $0) }) {
                    let full = code == ENOSPC || code == EDQUOT
                    throw LibraryError(full ? .insufficientStorage : .storage,
                                       "\(full ? "not enough space to unpack \(archiveName): " : "")cannot write \(url.path) (archive entry '\(entry.path)'): \(SystemFailure.reason(code))",
                                       underlying: POSIXErrorCode(rawValue: code).map { POSIXError($0) })
                }
            }
        } catch let error as LibraryError {
            throw error
        } catch {
            throw LibraryError(.invalidRequest, "archive entry '\(entry.path)' of \(archiveName) cannot be read: \(error)", underlying: SendableError(error))
        }
        guard checksum == entry.checksum else {
            throw LibraryError(.invalidRequest, "archive entry '\(entry.path)' of \(archiveName) is damaged (CRC-32 mismatch)")
        }
    }

    private static func isLink(_ url: URL) -> Bool {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: url.path)) != nil
    }
}

import Foundation
import ZIPFoundation

/// An archive's entries, checked before anything is written: what ``Unpacker`` may create.
///
/// Refused, for the whole archive: any entry whose path (without a trailing `/`) is not a
/// ``RelativePath`` (absolute or Windows paths, `..` components, NUL or control characters…),
/// any entry below a symbolic link, and any link that does not resolve, inside the archive, to
/// one of its files or folders.
///
/// Links are kept (a publisher may point `latest.pdf` at a page), but confined by
/// construction: a link's text is resolved against the entries of the archive, as the file
/// system would resolve it once they exist: `..` climbs from the link's folder, every step but
/// the last must be a folder of the archive and no step may be another link. Checked alone,
/// each of `p/q → ..`, `r → p/q/..`, `s → r/..` looks inside; resolved this way, `r` goes
/// through the link `p/q` and the archive is refused. A link to something the archive does not
/// hold (dangling, or a file already in the issue folder) is refused too.
struct ArchivePlan {
    struct PlannedEntry {
        let entry: Entry
        /// The path without trailing `/`.
        let path: String
        /// The uncompressed size the archive declares; writing stops past it.
        let declaredBytes: Int64
    }

    /// Limits against archives that expand without bound.
    static let maxEntries = 100_000
    /// The longest link target read (Linux's PATH_MAX).
    static let maxLinkBytes = 4096

    private(set) var entries: [PlannedEntry] = []
    private(set) var links: [(path: String, target: String)] = []
    /// The sum of the declared uncompressed sizes, clamped to `Int64.max`.
    private(set) var declaredBytes: Int64 = 0

    init(_ archive: Archive, name: String) throws(LibraryError) {
        // Counted while the central directory is read: an archive of millions of tiny entries is
        // refused without holding them all.
        var all: [Entry] = []
        for entry in archive {
            guard all.count < Self.maxEntries else {
                throw LibraryError(.invalidRequest, "archive \(name) has more than \(Self.maxEntries) entries, the limit")
            }
            all.append(entry)
        }
        var files = Set<String>(), folders = Set<String>(), linkPaths = Set<String>()
        for entry in all {
            var path = entry.path
            while path.hasSuffix("/") { path.removeLast() }
            try Self.validate(path)
            let components = path.split(separator: "/")
            for depth in 1..<max(components.count, 1) {
                folders.insert(components[0..<depth].joined(separator: "/"))
            }
            switch entry.type {
            case .directory: folders.insert(path)
            case .file: files.insert(path)
            case .symlink: linkPaths.insert(path)
            }
            let declared = Int64(clamping: entry.uncompressedSize)
            entries.append(PlannedEntry(entry: entry, path: path, declaredBytes: declared))
            let (sum, overflow) = declaredBytes.addingReportingOverflow(declared)
            declaredBytes = overflow ? .max : sum
        }
        for planned in entries {
            // Nothing may be written through a link, even one pointing inside.
            let components = planned.path.split(separator: "/")
            for depth in 1..<max(components.count, 1) where linkPaths.contains(components[0..<depth].joined(separator: "/")) {
                throw LibraryError(.invalidPath, "archive entry '\(planned.entry.path)' lies below the symbolic link '\(components[0..<depth].joined(separator: "/"))'")
            }
            guard planned.entry.type == .symlink else { continue }
            let target = try Self.linkTarget(planned, in: archive)
            try Self.resolve(planned.path, target: target, files: files, folders: folders, links: linkPaths)
            links.append((planned.path, target))
        }
    }

    private static func validate(_ path: String) throws(LibraryError) {
        do {
            // An entry naming a folder ends in `/`: the path is the entry without it.
            _ = try RelativePath(path, door: "archive entry")
        } catch {
            throw LibraryError(.invalidPath, "\(error.message) (refusing the whole archive)")
        }
    }

    /// The text of a link entry, read only if it is short enough to be a path.
    private static func linkTarget(_ planned: PlannedEntry, in archive: Archive) throws(LibraryError) -> String {
        let entry = planned.entry
        guard entry.uncompressedSize <= maxLinkBytes, entry.compressedSize <= maxLinkBytes else {
            throw LibraryError(.invalidRequest, "archive link '\(planned.path)' declares a \(entry.uncompressedSize)-byte target; the limit is \(maxLinkBytes)")
        }
        var data = Data()
        let checksum: CRC32
        do {
            checksum = try archive.extract(entry) { data.append($0) }
        } catch {
            throw LibraryError(.invalidRequest, "archive link '\(planned.path)' cannot be read: \(error)", underlying: SendableError(error))
        }
        guard checksum == entry.checksum, data.count <= maxLinkBytes else {
            throw LibraryError(.invalidRequest, "archive entry '\(entry.path)' is damaged (CRC-32 mismatch)")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Resolves the link at `path` to `target` against the archive's entries; throws unless it
    /// names a file or folder of the archive (or its root) without leaving it or using a link.
    private static func resolve(_ path: String, target: String, files: Set<String>, folders: Set<String>,
                                links: Set<String>) throws(LibraryError) {
        guard !target.isEmpty else {
            throw LibraryError(.invalidPath, "archive link '\(path)' has an empty target")
        }
        guard !target.hasPrefix("/"), !target.contains("\0") else {
            throw LibraryError(.invalidPath, "archive link '\(path)' points to the absolute path '\(target)'")
        }
        var resolved = path.split(separator: "/").dropLast().map(String.init)
        let steps = target.split(separator: "/")
        for (index, step) in steps.enumerated() {
            if step == "." { continue }
            if step == ".." {
                guard !resolved.isEmpty else {
                    throw LibraryError(.invalidPath, "archive link '\(path)' points outside the issue folder ('\(target)')")
                }
                resolved.removeLast()
                continue
            }
            resolved.append(String(step))
            let here = resolved.joined(separator: "/")
            if links.contains(here) {
                throw LibraryError(.invalidPath, "archive link '\(path)' ('\(target)') goes through the archive link '\(here)'; refusing the whole archive")
            }
            guard folders.contains(here) || (index == steps.count - 1 && files.contains(here)) else {
                throw LibraryError(.invalidPath, "archive link '\(path)' ('\(target)') does not lead to a file or folder of the archive; refusing the whole archive")
            }
        }
    }
}

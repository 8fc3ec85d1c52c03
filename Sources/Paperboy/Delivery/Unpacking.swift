import Foundation
import ZIPFoundation

/// How a delivered archive is processed.
public enum UnpackFormat: String, Sendable, Hashable, Codable {
    /// A zip archive, extracted into the issue folder.
    case zip
}

/// Extracts archives into an issue folder, confined to it.
///
/// Every entry is checked before anything is written: absolute paths, `..` components, NUL or
/// control characters, and symbolic links that point outside the archive are refused, and so is
/// any entry below a symbolic link. Extraction goes to a staging folder inside the issue folder
/// and is moved into place only when every entry succeeded: a refused or damaged archive leaves
/// nothing behind.
enum Unpacker {
    /// Limits against archives that expand without bound.
    static let maxEntries = 100_000

    static func unzip(_ archiveURL: URL, into folder: URL, staging: URL) throws(LibraryError) {
        do {
            try POSIX.makeDirectory(staging)
            defer { try? FileManager.default.removeItem(at: staging) }
            let archive: Archive
            do {
                archive = try Archive(url: archiveURL, accessMode: .read)
            } catch {
                throw LibraryError(.invalidRequest, "\(archiveURL.lastPathComponent) is not a readable zip archive: \(error)")
            }
            let entries = Array(archive)
            guard entries.count <= maxEntries else {
                throw LibraryError(.invalidRequest, "archive has \(entries.count) entries; the limit is \(maxEntries)")
            }
            let links = Set(entries.filter { $0.type == .symlink }.map { normalized($0.path) })
            var plannedLinks: [(path: String, target: String)] = []
            for entry in entries {
                let path = normalized(entry.path)
                try validate(path, entry: entry.path)
                // Nothing may be written through a link, even one pointing inside.
                let components = path.split(separator: "/")
                for depth in 1..<max(components.count, 1) where links.contains(components[0..<depth].joined(separator: "/")) {
                    throw LibraryError(.invalidPath, "archive entry '\(entry.path)' lies below the symbolic link '\(components[0..<depth].joined(separator: "/"))'")
                }
                switch entry.type {
                case .directory:
                    try POSIX.makeDirectory(staging.appendingPathComponent(path))
                case .file:
                    let target = staging.appendingPathComponent(path)
                    try POSIX.makeDirectory(target.deletingLastPathComponent())
                    let checksum = try archive.extract(entry, to: target)
                    guard checksum == entry.checksum else {
                        throw LibraryError(.invalidRequest, "archive entry '\(entry.path)' is damaged (CRC-32 mismatch)")
                    }
                    // Library files are private to the user, whatever modes the archive carries.
                    chmod(target.path, 0o600)
                case .symlink:
                    var data = Data()
                    let checksum = try archive.extract(entry) { data.append($0) }
                    guard checksum == entry.checksum else {
                        throw LibraryError(.invalidRequest, "archive entry '\(entry.path)' is damaged (CRC-32 mismatch)")
                    }
                    let target = String(decoding: data, as: UTF8.self)
                    try validateLink(path, target: target)
                    plannedLinks.append((path, target))
                }
            }
            for link in plannedLinks {
                let url = staging.appendingPathComponent(link.path)
                try POSIX.makeDirectory(url.deletingLastPathComponent())
                try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: link.target)
            }
            // Everything extracted: move it into place.
            for name in try FileManager.default.contentsOfDirectory(atPath: staging.path) {
                let destination = folder.appendingPathComponent(name)
                if FileManager.default.fileExists(atPath: destination.path) || isLink(destination) {
                    try FileManager.default.removeItem(at: destination)
                }
                try FileManager.default.moveItem(at: staging.appendingPathComponent(name), to: destination)
            }
        } catch let error as LibraryError {
            throw error
        } catch {
            throw LibraryError(.storage, "cannot unpack \(archiveURL.lastPathComponent): \(error)", underlying: SendableError(error))
        }
    }

    private static func normalized(_ path: String) -> String {
        var path = path
        while path.hasSuffix("/") { path.removeLast() }
        return path
    }

    private static func validate(_ path: String, entry: String) throws(LibraryError) {
        if entry.hasPrefix("/") || entry.hasPrefix("\\") || entry.contains("\\") {
            throw LibraryError(.invalidPath, "archive entry '\(entry)' has an absolute or Windows path")
        }
        do {
            try PathRules.validateRelativePath(path, what: "archive entry")
        } catch {
            throw LibraryError(.invalidPath, "\(error.message) (refusing the whole archive)")
        }
    }

    /// A link may point only at a place inside the archive's folder.
    private static func validateLink(_ path: String, target: String) throws(LibraryError) {
        guard !target.hasPrefix("/"), !target.contains("\0") else {
            throw LibraryError(.invalidPath, "archive link '\(path)' points to the absolute path '\(target)'")
        }
        var depth = path.split(separator: "/").count - 1
        for component in target.split(separator: "/") {
            if component == ".." {
                depth -= 1
                if depth < 0 {
                    throw LibraryError(.invalidPath, "archive link '\(path)' points outside the issue folder ('\(target)')")
                }
            } else if component != "." {
                depth += 1
            }
        }
    }

    private static func isLink(_ url: URL) -> Bool {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: url.path)) != nil
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyWire

/// `daemon-claims.json`: the identifiers of the claimed assets (a JSON array of strings), in the
/// library folder.
///
/// Written so that a crash or power loss at any instant leaves the old list or the new one
/// (``PrivateFolder/replaceFile(_:with:)``), never through a link. A file that does not read as
/// a list is never taken for an empty one (that would
/// silently drop every claim): it is kept aside as `daemon-claims.json.corrupt-N` for a person to
/// look at, and the caller rebuilds the claims from what waits in the inbox.
struct ClaimsFile {
    /// What reading found.
    enum Contents: Equatable {
        /// The saved claims (none when there is no file yet).
        case claims(Set<String>)
        /// The file did not read as a list; it was moved to `keptAs` (nil if that failed too).
        case corrupt(keptAs: URL?, reason: String)
    }

    let url: URL
    private let libraryRoot: URL
    static let fileName = "daemon-claims.json"

    init(libraryRoot: URL) {
        self.libraryRoot = libraryRoot
        url = libraryRoot.appendingPathComponent(Self.fileName)
    }

    /// Reads the claims, setting a corrupt file aside. The file is read in the library folder
    /// opened as a ``PrivateFolder``, never through a link; one that cannot be read so is kept
    /// aside like a corrupt one.
    func read() -> Contents {
        let reader = JSONReader("claims file \(url.path)", limits: .stateFile)
        let data: Data
        let folder: PrivateFolder
        do {
            folder = try PrivateFolder.open(libraryRoot)
            guard let content = try folder.readFile(Self.fileName, atMost: JSONReader.Limits.stateFile.maxBytes) else { return .claims([]) }
            data = content
        } catch {
            return .corrupt(keptAs: nil, reason: error.message)
        }
        do {
            return .claims(Set(try reader.decode([String].self, from: data)))
        } catch {
            let reason = if let error = error as? JSONInputError, error.kind != .syntax {
                error.problem
            } else {
                data.isEmpty ? "it is empty" : "it is not a JSON array of strings"
            }
            return .corrupt(keptAs: setAside(in: folder), reason: reason)
        }
    }

    /// Moves the file aside as `daemon-claims.json.corrupt-N` in its folder; returns where (nil if
    /// that failed).
    private func setAside(in folder: PrivateFolder) -> URL? {
        for number in 1...1000 {
            let aside = "\(Self.fileName).corrupt-\(number)"
            guard folder.entry(aside) == nil else { continue }
            return renameat(folder.fd, Self.fileName, folder.fd, aside) == 0 ? URL(fileURLWithPath: folder.path(of: aside)) : nil
        }
        return nil
    }

    /// Replaces the file with `claims`, durably (``PrivateFolder/replaceFile(_:with:)``).
    ///
    /// - Throws: ``LibraryError`` `.storage` naming the file and the reason.
    func write(_ claims: [String]) throws(LibraryError) {
        let data: Data
        do {
            data = try JSONCoding.plain.encoder.encode(claims)
        } catch {
            throw LibraryError(.storage, "cannot encode the claims for \(url.path): \(error)")
        }
        let folder: PrivateFolder
        do {
            folder = try PrivateFolder.open(libraryRoot)
        } catch {
            throw LibraryError(.storage, "cannot record the claimed assets in \(url.path): \(error.message)")
        }
        do {
            try folder.replaceFile(Self.fileName, with: data)
        } catch {
            throw LibraryError(error.code, "cannot record the claimed assets: \(error.message)")
        }
    }
}

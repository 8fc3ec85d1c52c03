#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy

/// `daemon-claims.json`: the identifiers of the claimed assets (a JSON array of strings), in the
/// library folder.
///
/// Written so that a crash or power loss at any instant leaves the old list or the new one:
/// a temporary file in the same folder, `fsync`, `rename` over the old one, `fsync` of the
/// folder. A file that does not read as a list is never taken for an empty one (that would
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

    init(libraryRoot: URL) {
        url = libraryRoot.appendingPathComponent("daemon-claims.json")
    }

    /// Reads the claims, setting a corrupt file aside.
    func read() -> Contents {
        let reader = JSONReader("claims file \(url.path)", limits: .stateFile)
        let data: Data
        do {
            guard let contents = try reader.contents(of: url) else { return .claims([]) }
            data = contents
        } catch let error as JSONInputError {
            return .corrupt(keptAs: setAside(), reason: error.problem)
        } catch {
            return .claims([])
        }
        do {
            return .claims(Set(try reader.decode([String].self, from: data)))
        } catch {
            let reason = if let error = error as? JSONInputError, error.kind != .syntax {
                error.problem
            } else {
                data.isEmpty ? "it is empty" : "it is not a JSON array of strings"
            }
            return .corrupt(keptAs: setAside(), reason: reason)
        }
    }

    /// Moves the file aside as `daemon-claims.json.corrupt-N`; returns where (nil if that failed).
    private func setAside() -> URL? {
        for number in 1...1000 {
            let aside = URL(fileURLWithPath: url.path + ".corrupt-\(number)")
            guard access(aside.path, F_OK) != 0 else { continue }
            return rename(url.path, aside.path) == 0 ? aside : nil
        }
        return nil
    }

    /// Replaces the file with `claims`, durably.
    ///
    /// - Throws: ``LibraryError`` `.storage` naming the file and the reason.
    func write(_ claims: [String]) throws(LibraryError) {
        let data: Data
        do {
            data = try JSONEncoder().encode(claims)
        } catch {
            throw LibraryError(.storage, "cannot encode the claims for \(url.path): \(error)")
        }
        let folder = url.deletingLastPathComponent().path
        let temporary = url.path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LibraryError(.storage, "cannot write \(temporary): \(systemError())") }
        var failure: String?
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = systemError()
                    return
                }
                offset += written
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = systemError() }
        close(fd)
        if failure == nil, rename(temporary, url.path) != 0 { failure = systemError() }
        if let failure {
            unlink(temporary)
            throw LibraryError(.storage, "cannot record the claimed assets in \(url.path): \(failure)")
        }
        let directory = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            _ = fsync(directory)
            close(directory)
        }
    }
}

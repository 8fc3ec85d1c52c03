#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Paperboy

/// Fetches one file out of a local tar archive: `tar://localhost/srv/issues/2026-11.tar!/cover.png`.
///
/// Publishers often ship an issue as one archive; this transport delivers single entries from
/// it without unpacking the rest, with resume (it reads the entry in place, from any offset)
/// and a strong validator (the archive's size, modification time and inode, plus where the
/// entry sits), so an archive replaced mid-download restarts from zero. Uncompressed archives
/// only: ustar, pax long names and sizes, GNU long names.
///
/// ```swift
/// let registry = TransportRegistry([FileTransport(), TarTransport()])
/// ```
public struct TarTransport: Transport {
    /// Bytes read per chunk.
    public var chunkSize: Int

    /// Creates the transport.
    public init(chunkSize: Int = 256 * 1024) {
        self.chunkSize = max(4096, chunkSize)
    }

    public var schemes: Set<String> { ["tar"] }
    public var capabilities: TransportCapabilities { [.resume, .validators] }

    /// The URL of `entry` inside the archive at `archive`.
    public static func url(archive: URL, entry: String) -> URL {
        var components = URLComponents()
        components.scheme = "tar"
        components.host = "localhost"
        components.path = archive.standardizedFileURL.path + "!/" + TarArchive.normalized(entry)
        return components.url!
    }

    public func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        let (archivePath, entryName) = try Self.split(job.url)
        let fd = open(archivePath, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let reason = String(cString: strerror(errno))
            let code: TransportError.Code = errno == ENOENT || errno == ENOTDIR ? .notFound : errno == EACCES ? .accessDenied : .ioError
            throw TransportError(code, "cannot open archive \(archivePath): \(reason)", url: job.url)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw TransportError(.ioError, "cannot read archive \(archivePath): \(String(cString: strerror(errno)))", url: job.url)
        }
        let entry: TarArchive.Entry
        do {
            guard let found = try TarArchive.find(entryName, in: fd) else {
                throw TransportError(.notFound, "no file '\(entryName)' in archive \(archivePath)", url: job.url)
            }
            entry = found
        } catch let error as TarArchive.Malformed {
            throw TransportError(.protocolError, "archive \(archivePath) is not a readable tar file: \(error)", url: job.url, isRetryable: false)
        }
        let validator = Self.validator(info, entry: entry)
        var offset = job.offset
        if offset > entry.size || (offset > 0 && job.validator != validator) { offset = 0 }
        try sink.begin(TransferResponse(offset: offset, expectedLength: entry.size, validator: validator))

        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var position = offset
        while position < entry.size {
            try Task.checkCancellation()
            let want = Int(min(Int64(chunkSize), entry.size - position))
            let got = pread(fd, buffer.baseAddress, want, off_t(entry.dataOffset + position))
            if got < 0 {
                if errno == EINTR { continue }
                throw TransportError(.ioError, "cannot read archive \(archivePath): \(String(cString: strerror(errno)))", url: job.url)
            }
            if got == 0 {
                throw TransportError(.sourceChanged, "archive \(archivePath) shrank while being read", url: job.url)
            }
            try await sink.write(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
            position += Int64(got)
        }
    }

    /// The archive's path and the entry's name in a `tar:` URL.
    static func split(_ url: URL) throws -> (archive: String, entry: String) {
        let host = url.host ?? ""
        let path = url.path
        guard url.scheme?.lowercased() == "tar", host.isEmpty || host == "localhost",
              let bang = path.range(of: "!/"), !path[..<bang.lowerBound].isEmpty,
              !TarArchive.normalized(String(path[bang.upperBound...])).isEmpty else {
            throw TransportError(
                .badURL, "expected tar://localhost/PATH/TO/ARCHIVE.tar!/ENTRY, got \(url.absoluteString)", url: url, isRetryable: false)
        }
        return (String(path[..<bang.lowerBound]), String(path[bang.upperBound...]))
    }

    static func validator(_ info: stat, entry: TarArchive.Entry) -> ResourceValidator {
        #if canImport(Darwin)
        let mtime = Int64(info.st_mtimespec.tv_sec) * 1_000_000_000 + Int64(info.st_mtimespec.tv_nsec)
        #else
        let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        #endif
        return ResourceValidator(
            "archive=\(info.st_size),\(mtime),\(info.st_ino);entry=\(entry.dataOffset),\(entry.size)", strength: .strong)
    }
}

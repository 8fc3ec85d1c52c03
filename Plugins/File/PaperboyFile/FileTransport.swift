#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Paperboy

/// Copies local files (`file:` URLs and plain paths) through the core's sink.
///
/// Resumes from any offset, and copies one range of a file when a job asks for it
/// (``TransportCapabilities/ranges``: an indexed asset's missing chunks). The validator is size +
/// modification time (nanoseconds) + inode: a source replaced or rewritten since the partial
/// bytes began restarts from zero, and then copies the whole file (a range's answer says so).
public struct FileTransport: Transport {
    /// Bytes read per chunk.
    public var chunkSize: Int

    /// Creates the transport.
    public init(chunkSize: Int = 1 << 20) {
        self.chunkSize = max(4096, chunkSize)
    }

    public var schemes: Set<String> { ["file"] }
    public var capabilities: TransportCapabilities { [.resume, .validators, .local, .ranges] }

    public func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        let path = job.url.path
        guard job.url.isFileURL, !path.isEmpty else {
            throw TransportError(.badURL, "not a local file URL", url: job.url, isRetryable: false)
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw Self.error(errno, opening: job.url) }
        defer { close(fd) }

        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Self.error(errno, opening: job.url) }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            throw TransportError(.notFound, "\(path) is a folder, not a file", url: job.url, isRetryable: false)
        }
        let size = Int64(info.st_size)
        let validator = Self.validator(info)

        var offset = job.offset
        var end = size
        let changed = job.validator != nil && job.validator != validator
        if offset > size || (offset > 0 && changed) {
            offset = 0
        } else if let rangeEnd = job.rangeEnd, !changed {
            end = max(offset, min(rangeEnd, size))
        }
        try sink.begin(TransferResponse(offset: offset, end: end < size ? end : nil, expectedLength: size, validator: validator))

        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var position = offset
        while position < end {
            try Task.checkCancellation()
            let want = Int(min(Int64(chunkSize), end - position))
            let got = pread(fd, buffer.baseAddress, want, off_t(position))
            if got < 0 {
                if errno == EINTR { continue }
                throw TransportError(.ioError, SystemFailure.message("cannot read", path), url: job.url)
            }
            if got == 0 {
                throw TransportError(.sourceChanged, "\(path) shrank to \(position) bytes while being copied", url: job.url)
            }
            try await sink.write(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
            position += Int64(got)
        }
        var after = stat()
        if fstat(fd, &after) == 0, Self.validator(after) != validator {
            throw TransportError(.sourceChanged, "\(path) changed while being copied", url: job.url)
        }
    }

    static func validator(_ info: stat) -> ResourceValidator {
        #if canImport(Darwin)
        let mtime = Int64(info.st_mtimespec.tv_sec) * 1_000_000_000 + Int64(info.st_mtimespec.tv_nsec)
        #else
        let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        #endif
        return ResourceValidator("size=\(info.st_size);mtime=\(mtime);inode=\(info.st_ino)", strength: .strong)
    }

    static func error(_ code: Int32, opening url: URL) -> TransportError {
        let reason = SystemFailure.reason(code)
        switch code {
        case ENOENT, ENOTDIR:
            return TransportError(.notFound, "no such file: \(url.path)", url: url, isRetryable: false)
        case EACCES, EPERM:
            return TransportError(.accessDenied, "permission denied reading \(url.path)", url: url, isRetryable: false)
        default:
            return TransportError(.ioError, "cannot open \(url.path): \(reason)", url: url)
        }
    }
}

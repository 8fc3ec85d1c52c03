#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import Foundation

extension ChunkIndex {
    /// The bytes read at a time: at least four of the largest chunks, so that a chunk is cut
    /// from memory in one piece, and at least 1 MiB, so that reads are few. Memory stays this
    /// whatever the file's size.
    static func bufferSize(for parameters: ChunkingParameters) -> Int {
        Swift.max(4 * parameters.maximum, 1 << 20)
    }

    /// Cuts the file at `url` into chunks and hashes each one and the whole file, in one pass
    /// through a buffer of fixed size (``bufferSize(for:)``): memory is flat in the file's size.
    ///
    /// - Throws: ``LibraryError`` (`.storage`) naming the file and the system's reason when it
    ///   cannot be opened or read.
    package static func make(ofFileAt url: URL, parameters: ChunkingParameters = .standard) throws(LibraryError) -> ChunkIndex {
        let path = url.path
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { throw LibraryError(.storage, SystemFailure.message("cannot open", path), isRetryable: false) }
        defer { close(file) }
        var info = stat()
        if fstat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            throw LibraryError(.storage, SystemFailure.message("cannot index", path, code: EISDIR), isRetryable: false)
        }
        var cutter = StreamingChunker(parameters)
        let capacity = bufferSize(for: parameters)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 64)
        defer { buffer.deallocate() }
        var start = 0
        var filled = 0
        var atEnd = false
        while true {
            if !atEnd, filled - start < parameters.maximum {
                // Keep the unfinished chunk, move it to the front, and fill the rest.
                if start > 0 {
                    buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: filled - start)
                    filled -= start
                    start = 0
                }
                switch POSIX.readFully(file, into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...])) {
                case .success(let count):
                    filled += count
                    atEnd = filled < capacity
                case .failure(let failure):
                    throw LibraryError(.storage, SystemFailure.message("cannot read", path, code: failure.code), isRetryable: false)
                }
            }
            guard filled > start else { break }
            start += cutter.next(UnsafeRawBufferPointer(rebasing: buffer[start..<filled]))
        }
        return cutter.finish()
    }
}

/// The chunks of a stream, cut and hashed as bytes arrive, and the SHA-256 of the whole.
struct StreamingChunker {
    private let chunker: Chunker
    private var whole = SHA256()
    private var chunks: [ChunkIndex.Chunk] = []
    private var offset: Int64 = 0

    init(_ parameters: ChunkingParameters) {
        chunker = Chunker(parameters)
    }

    /// Cuts the next chunk from `bytes` (at least the maximum chunk, or all that is left of the
    /// stream) and returns its length.
    mutating func next(_ bytes: UnsafeRawBufferPointer) -> Int {
        let length = chunker.cut(bytes)
        let chunk = UnsafeRawBufferPointer(rebasing: bytes[..<length])
        whole.update(bufferPointer: chunk)
        var hasher = SHA256()
        hasher.update(bufferPointer: chunk)
        chunks.append(ChunkIndex.Chunk(offset: offset, length: length, sha256: SHA256Value(hasher.finalize())))
        offset += Int64(length)
        return length
    }

    /// The index of what was cut.
    func finish() -> ChunkIndex {
        ChunkIndex(parameters: chunker.parameters, fileSize: offset, sha256: SHA256Value(whole.finalize()), chunks: chunks)
    }
}

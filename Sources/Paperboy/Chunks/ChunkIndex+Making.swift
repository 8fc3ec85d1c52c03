#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import Foundation
import Synchronization

extension ChunkIndex {
    /// The bytes read at a time: at least four of the largest chunks, so that a chunk is cut
    /// from memory in one piece, and at least 1 MiB, so that reads are few. Memory stays this
    /// (times the threads, ``cutThreads(forFileOf:)``) whatever the file's size.
    static func bufferSize(for parameters: ChunkingParameters) -> Int {
        Swift.max(4 * parameters.maximum, 1 << 20)
    }

    /// The smallest share of a file one thread cuts: below 2 × this a file is cut on the calling
    /// thread alone, where starting threads would cost more than they save.
    static let smallestSegment: Int64 = 8 << 20

    /// How many threads cut a file of `size` bytes: one a core, each with at least
    /// ``smallestSegment`` bytes.
    static func cutThreads(forFileOf size: Int64) -> Int {
        Int(Swift.max(1, Swift.min(Int64(ProcessInfo.processInfo.activeProcessorCount), size / smallestSegment)))
    }

    /// Cuts the file at `url` into chunks and hashes each one and the whole file, with memory
    /// flat in the file's size (``FileCut``): the same index whatever `segments` is.
    ///
    /// - Parameter segments: the threads that cut the file, each from its own share on
    ///   (``FileCut``); `nil` picks ``cutThreads(forFileOf:)``. For tests.
    /// - Throws: ``LibraryError`` (`.storage`) naming the file and the system's reason when it
    ///   cannot be opened or read, or is a directory, or changes size while it is read.
    package static func make(ofFileAt url: URL, parameters: ChunkingParameters = .standard,
                             segments: Int? = nil) throws(LibraryError) -> ChunkIndex {
        let cut = try FileCut.make(url, parameters: parameters, hashingWhole: true, segments: segments)
        return ChunkIndex(parameters: parameters, fileSize: cut.size, sha256: cut.whole!, chunks: cut.chunks)
    }

    /// The chunks ``make(ofFileAt:parameters:segments:)`` would give, without the whole file's
    /// SHA-256 (one pass through the file less): a seed's cut, which only its chunks are
    /// looked up from (``ChunkPlan``).
    package static func chunks(ofFileAt url: URL, parameters: ChunkingParameters = .standard,
                               segments: Int? = nil) throws(LibraryError) -> [Chunk] {
        try FileCut.make(url, parameters: parameters, hashingWhole: false, segments: segments).chunks
    }
}

/// A file's content-defined cut, shared among threads, and the same as one thread's.
///
/// The file is split into `segments` shares; thread k cuts and hashes chunks from the start of
/// share k, as if a chunk began there, and goes on past its share's end. A chunk is a function
/// of its first byte's offset alone (``Chunker/cut(_:)`` reads the bytes from there, the SHA-256
/// hashes them), so a chunk thread k cut at an offset where the sequential cut also has a
/// boundary *is* the sequential cut's chunk there, and so are all that thread k cut after it.
/// Each thread claims every offset it cuts at (`Claims`) and stops at the first one another
/// thread has claimed, or at the file's end; no offset is cut twice. The sequential cut is then
/// stitched from 0: each boundary b is claimed (0 by thread 0; a claim of b is only made to cut
/// the chunk at b, and the claimer goes on to b + its length and claims that or finds it
/// claimed), so every chunk of the sequential cut was cut by some thread, and chunks cut
/// before a thread met the sequential cut are left out. Content-defined cuts meet again within
/// a few chunks where bytes are not repetitive (the hash depends on the last 64 bytes only);
/// where they never meet (a file of one repeated byte cut at the maximum each time), the thread
/// before cuts on to the end: the cut is as slow as one thread's, and the same.
///
/// With the whole file's SHA-256 and more than one share, one more thread hashes the file from
/// start to end (a SHA-256 cannot be split). Memory is ``ChunkIndex/bufferSize(for:)`` a thread.
struct FileCut {
    var size: Int64
    var chunks: [ChunkIndex.Chunk]
    var whole: SHA256Value?

    /// The offsets threads have cut at, and the first failure, which stops them all.
    final class Claims: Sendable {
        private struct State {
            var claimed = Set<Int64>()
            var failure: LibraryError?
        }
        private let state = Mutex(State())

        /// Whether the caller is the first to cut at `offset` (false too once a thread failed).
        func claim(_ offset: Int64) -> Bool {
            state.withLock { $0.failure == nil && $0.claimed.insert(offset).inserted }
        }

        var hasFailed: Bool { state.withLock { $0.failure != nil } }

        func fail(_ failure: LibraryError) {
            state.withLock { if $0.failure == nil { $0.failure = failure } }
        }

        var failure: LibraryError? { state.withLock { $0.failure } }
    }

    /// One thread's results, by thread.
    final class Results: Sendable {
        private let chunks: Mutex<[[ChunkIndex.Chunk]]>
        private let whole = Mutex<SHA256Value?>(nil)

        init(threads: Int) { chunks = Mutex(Array(repeating: [], count: threads)) }

        func set(_ found: [ChunkIndex.Chunk], of thread: Int) { chunks.withLock { $0[thread] = found } }
        func set(whole value: SHA256Value) { whole.withLock { $0 = value } }
        var all: [[ChunkIndex.Chunk]] { chunks.withLock { $0 } }
        var wholeValue: SHA256Value? { whole.withLock { $0 } }
    }

    static func make(_ url: URL, parameters: ChunkingParameters, hashingWhole: Bool, segments: Int?) throws(LibraryError) -> FileCut {
        let path = url.path
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { throw LibraryError(.storage, SystemFailure.message("cannot open", path), isRetryable: false) }
        defer { close(file) }
        var info = stat()
        guard fstat(file, &info) == 0 else { throw LibraryError(.storage, SystemFailure.message("cannot index", path), isRetryable: false) }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            throw LibraryError(.storage, SystemFailure.message("cannot index", path, code: EISDIR), isRetryable: false)
        }
        let size = Int64(info.st_size)
        let shares = Swift.max(1, Swift.min(segments ?? ChunkIndex.cutThreads(forFileOf: size), Int(Swift.max(size, 1))))
        let reader = SegmentReader(file: file, path: path, size: size, parameters: parameters)
        if shares == 1 {
            // One thread: the whole file's SHA-256 in the same pass.
            var whole = hashingWhole ? SHA256() : nil
            let chunks = try reader.cut(from: 0, claims: nil, whole: &whole)
            return FileCut(size: size, chunks: chunks, whole: whole.map { SHA256Value($0.finalize()) })
        }
        let claims = Claims()
        let results = Results(threads: shares)
        var jobs: [@Sendable () -> Void] = (0..<shares).map { share in
            {
                do throws(LibraryError) {
                    var none: SHA256? = nil
                    results.set(try reader.cut(from: size * Int64(share) / Int64(shares), claims: claims, whole: &none), of: share)
                } catch {
                    claims.fail(error)
                }
            }
        }
        if hashingWhole {
            jobs.append {
                do throws(LibraryError) {
                    results.set(whole: try reader.hashWhole(claims: claims))
                } catch {
                    claims.fail(error)
                }
            }
        }
        runTogether(jobs)
        if let failure = claims.failure { throw failure }
        let chunks = try stitch(results.all, size: size, path: path)
        return FileCut(size: size, chunks: chunks, whole: results.wholeValue)
    }

    /// The sequential cut from 0, out of the chunks the threads cut (see ``FileCut``).
    static func stitch(_ found: [[ChunkIndex.Chunk]], size: Int64, path: String) throws(LibraryError) -> [ChunkIndex.Chunk] {
        var chunks: [ChunkIndex.Chunk] = []
        var end: Int64 = 0
        for chunk in found.joined().sorted(by: { $0.offset < $1.offset }) where chunk.offset >= end {
            // Every boundary was claimed and cut: a gap means the file changed under the threads.
            guard chunk.offset == end else { break }
            chunks.append(chunk)
            end += Int64(chunk.length)
        }
        guard end == size else {
            throw LibraryError(.storage, "cannot index \(path): it changed while it was read (\(end) of \(size) bytes cut)", isRetryable: false)
        }
        return chunks
    }

    /// Runs the first job on the calling thread and each other on a thread of its own, and
    /// returns when all have. Not the cooperative pool's or Dispatch's global threads: the
    /// jobs are minutes of CPU for a large file, and must run at once.
    static func runTogether(_ jobs: [@Sendable () -> Void]) {
        let done = DispatchGroup()
        for job in jobs.dropFirst() {
            done.enter()
            Thread.detachNewThread {
                job()
                done.leave()
            }
        }
        jobs.first?()
        done.wait()
    }
}

/// Reads one file for ``FileCut``'s threads, each through its own buffer, at offsets (`pread`).
struct SegmentReader: Sendable {
    let file: Int32
    let path: String
    let size: Int64
    let parameters: ChunkingParameters

    private func failure(_ code: Int32) -> LibraryError {
        LibraryError(.storage, SystemFailure.message("cannot read", path, code: code), isRetryable: false)
    }

    private func shorter(at offset: Int64) -> LibraryError {
        LibraryError(.storage, "cannot index \(path): it changed while it was read (it ended at byte \(offset) of \(size))", isRetryable: false)
    }

    /// Cuts and hashes chunks from `start` on, as if a chunk began there, to the file's end or
    /// to the first offset `claims` says another thread has cut at (all of it without `claims`),
    /// hashing the bytes into `whole` too when there is one.
    func cut(from start: Int64, claims: FileCut.Claims?, whole: inout SHA256?) throws(LibraryError) -> [ChunkIndex.Chunk] {
        let chunker = Chunker(parameters)
        let capacity = ChunkIndex.bufferSize(for: parameters)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 64)
        defer { buffer.deallocate() }
        var chunks: [ChunkIndex.Chunk] = []
        // The buffer holds the file's bytes from `base`; the next chunk starts at `begin` in it.
        var base = start
        var begin = 0
        var filled = 0
        while base + Int64(begin) < size {
            let offset = base + Int64(begin)
            if let claims, !claims.claim(offset) { break }
            if filled - begin < parameters.maximum, base + Int64(filled) < size {
                // Keep the unfinished chunk, move it to the front, and fill the rest.
                if begin > 0 {
                    buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + begin, byteCount: filled - begin)
                    filled -= begin
                    base += Int64(begin)
                    begin = 0
                }
                let wanted = Int(Swift.min(Int64(capacity - filled), size - base - Int64(filled)))
                switch POSIX.readFully(file, into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<(filled + wanted)]), at: base + Int64(filled)) {
                case .success(let count):
                    filled += count
                    guard count == wanted else { throw shorter(at: base + Int64(filled)) }
                case .failure(let failure):
                    throw self.failure(failure.code)
                }
            }
            let length = chunker.cut(UnsafeRawBufferPointer(rebasing: buffer[begin..<filled]))
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[begin..<(begin + length)])
            whole?.update(bufferPointer: chunk)
            var hasher = SHA256()
            hasher.update(bufferPointer: chunk)
            chunks.append(ChunkIndex.Chunk(offset: offset, length: length, sha256: SHA256Value(hasher.finalize())))
            begin += length
        }
        return chunks
    }

    /// The SHA-256 of the file's `size` bytes, read from start to end; stops early (with any
    /// value) once `claims` says a thread failed.
    func hashWhole(claims: FileCut.Claims) throws(LibraryError) -> SHA256Value {
        let capacity = ChunkIndex.bufferSize(for: parameters)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 64)
        defer { buffer.deallocate() }
        var hasher = SHA256()
        var offset: Int64 = 0
        while offset < size, !claims.hasFailed {
            let wanted = Int(Swift.min(Int64(capacity), size - offset))
            switch POSIX.readFully(file, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted]), at: offset) {
            case .success(let count):
                guard count == wanted else { throw shorter(at: offset + Int64(count)) }
                hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                offset += Int64(count)
            case .failure(let failure):
                throw self.failure(failure.code)
            }
        }
        return SHA256Value(hasher.finalize())
    }
}

import Foundation

extension ChunkIndex {
    /// How much a reader accepts: the largest file an index may describe and the most chunks.
    package struct Limits: Sendable, Equatable {
        /// The largest file an index may describe: the asset's expected size when it is known,
        /// else a cap.
        package var maxFileSize: Int64
        /// The most chunks: an index's entries are held in memory (48 bytes each).
        package var maxChunks: Int

        /// 2^20 chunks: 36 MiB of index, 8 GiB of file at the smallest chunks of
        /// ``ChunkingParameters/standard``, 32 GiB at its average.
        package static let defaultMaxChunks = 1 << 20

        package init(maxFileSize: Int64, maxChunks: Int = defaultMaxChunks) {
            self.maxFileSize = maxFileSize
            self.maxChunks = maxChunks
        }

        /// The most bytes an index within these limits can have: the header and one entry per
        /// ``ChunkingParameters/smallestMinimum`` bytes of the file (plus one), at most
        /// ``maxChunks``. A reader fetching an index asks for no more.
        package var maxIndexBytes: Int {
            let byFileSize = maxFileSize / Int64(ChunkingParameters.smallestMinimum) + 1
            let chunks = Swift.max(0, Swift.min(Int64(maxChunks), byFileSize))
            return ChunkIndex.headerSize + Int(chunks) * ChunkIndex.entrySize
        }
    }

    /// Reads an index from a stranger: every number checked before it is used, with checked
    /// arithmetic, and anything the writer would not have written refused.
    ///
    /// - Parameters:
    ///   - source: the index's URL or path, for errors.
    ///   - limits: the largest file it may describe and the most chunks.
    /// - Throws: ``ChunkIndexError`` naming `source` and the problem.
    package static func decode(_ data: Data, from source: String, limits: Limits) throws(ChunkIndexError) -> ChunkIndex {
        let result = data.withUnsafeBytes { bytes -> Result<ChunkIndex, ChunkIndexError> in
            do throws(ChunkIndexError) {
                let header = try Header(bytes, from: source, limits: limits)
                return .success(try header.entries(bytes))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Reads the index file at `url` no further than its header allows: the header first, then
    /// the entries it announces (checked against `limits`) and one byte more to see that
    /// nothing follows.
    ///
    /// - Throws: ``ChunkIndexError`` naming the path and the problem (`.unreadable` when the
    ///   file cannot be opened or read).
    package static func read(contentsOf url: URL, limits: Limits) throws(ChunkIndexError) -> ChunkIndex {
        let source = url.path
        func unreadable(_ error: any Error) -> ChunkIndexError {
            ChunkIndexError(source: source, kind: .unreadable, problem: "cannot read it: \(error.localizedDescription)")
        }
        let handle: FileHandle
        do {
            handle = try FileHandle(forReadingFrom: url)
        } catch {
            throw unreadable(error)
        }
        defer { try? handle.close() }
        var data: Data
        do {
            data = try handle.read(upToCount: headerSize) ?? Data()
        } catch {
            throw unreadable(error)
        }
        let header = try data.withUnsafeBytes { bytes in Result { () throws(ChunkIndexError) in try Header(bytes, from: source, limits: limits) } }.get()
        do {
            data.append(try handle.read(upToCount: header.encodedSize - headerSize + 1) ?? Data())
        } catch {
            throw unreadable(error)
        }
        return try decode(data, from: source, limits: limits)
    }
}

/// The 66 bytes before the entries, checked: everything the entries are then checked against.
private struct Header {
    /// The index's URL or path, for errors.
    let source: String
    let parameters: ChunkingParameters
    let fileSize: Int64
    let sha256: SHA256Value
    let count: Int
    /// The index's size in bytes that the count implies.
    let encodedSize: Int

    init(_ bytes: UnsafeRawBufferPointer, from source: String, limits: ChunkIndex.Limits) throws(ChunkIndexError) {
        self.source = source
        func refuse(_ kind: ChunkIndexError.Kind, _ problem: String) -> ChunkIndexError {
            Header.refusal(source, kind, problem)
        }
        let magic = ChunkIndex.magic
        guard bytes.count >= magic.count, bytes.prefix(magic.count).elementsEqual(magic) else {
            if bytes.count < magic.count, bytes.elementsEqual(magic.prefix(bytes.count)) {
                throw refuse(.truncated, "\(bytes.count) bytes, shorter than the \(ChunkIndex.headerSize)-byte header")
            }
            throw refuse(.magic, "not a chunk index: it does not begin with 'PBIDX'")
        }
        guard bytes.count >= ChunkIndex.headerSize else {
            throw refuse(.truncated, "\(bytes.count) bytes, shorter than the \(ChunkIndex.headerSize)-byte header")
        }
        func u32(_ offset: Int) -> Int { Int(UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))) }
        func u64(_ offset: Int) -> UInt64 { UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
        let version = bytes[5]
        guard version == ChunkIndex.version else {
            throw refuse(.version, "version \(version); this reader reads version \(ChunkIndex.version)")
        }
        let (minimum, average, maximum) = (u32(6), u32(10), u32(14))
        if let problem = ChunkingParameters.problem(minimum: minimum, average: average, maximum: maximum) {
            throw refuse(.parameters, problem)
        }
        parameters = ChunkingParameters(minimum: minimum, average: average, maximum: maximum)!
        let size = u64(18)
        guard size <= UInt64(max(0, limits.maxFileSize)) else {
            throw refuse(.size, "it describes a file of \(size) bytes; the limit is \(limits.maxFileSize)")
        }
        fileSize = Int64(size)
        sha256 = SHA256Value(reading: bytes, at: 26)
        let declared = u64(58)
        // Every chunk but the last is at least the minimum and none above the maximum: the
        // count lies between these two, and both are far below 2^62 for a file within limits.
        let most = fileSize == 0 ? 0 : fileSize / Int64(minimum) + 1
        let least = fileSize == 0 ? 0 : (fileSize - 1) / Int64(maximum) + 1
        guard declared <= UInt64(most), declared >= UInt64(least) else {
            throw refuse(.count, "\(declared) chunks for a file of \(fileSize) bytes cut at \(parameters); it needs \(least) to \(most)")
        }
        guard declared <= UInt64(max(0, limits.maxChunks)) else {
            throw refuse(.count, "\(declared) chunks; the limit is \(limits.maxChunks)")
        }
        count = Int(declared)
        // count ≤ maxChunks, an Int: the product cannot overflow for any sane limit, but the
        // limit is the caller's, so it is checked too.
        let (entries, overflow) = count.multipliedReportingOverflow(by: ChunkIndex.entrySize)
        let (total, overflowTotal) = entries.addingReportingOverflow(ChunkIndex.headerSize)
        guard !overflow, !overflowTotal else { throw refuse(.count, "\(declared) chunks is more than an index can hold") }
        encodedSize = total
    }

    /// The entries after the header, checked against it: lengths within the parameters, adding
    /// up to the file's size, and nothing after the last.
    func entries(_ bytes: UnsafeRawBufferPointer) throws(ChunkIndexError) -> ChunkIndex {
        func refuse(_ kind: ChunkIndexError.Kind, _ problem: String) -> ChunkIndexError {
            Header.refusal(source, kind, problem)
        }
        if bytes.count < encodedSize {
            let whole = (bytes.count - ChunkIndex.headerSize) / ChunkIndex.entrySize
            throw refuse(.truncated, "\(bytes.count) bytes; its \(count) chunks need \(encodedSize) (chunk \(whole + 1) is cut short)")
        }
        if bytes.count > encodedSize {
            throw refuse(.trailing, "\(bytes.count - encodedSize) bytes after its last chunk (byte \(encodedSize))")
        }
        var chunks: [ChunkIndex.Chunk] = []
        chunks.reserveCapacity(count)
        var offset: Int64 = 0
        for number in 0..<count {
            let at = ChunkIndex.headerSize + number * ChunkIndex.entrySize
            let length = Int(UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self)))
            let isLast = number == count - 1
            guard length >= 1, length <= parameters.maximum, isLast || length >= parameters.minimum else {
                let rule = isLast ? "1 to \(parameters.maximum)" : "\(parameters.minimum) to \(parameters.maximum) (all but the last)"
                throw refuse(.chunkLength, "chunk \(number + 1) of \(count) (byte \(at)) has length \(length); lengths are \(rule)")
            }
            let (sum, overflow) = offset.addingReportingOverflow(Int64(length))
            guard !overflow, sum <= fileSize else {
                throw refuse(.total, "chunks 1 to \(number + 1) add up to more than the file's \(fileSize) bytes")
            }
            chunks.append(ChunkIndex.Chunk(offset: offset, length: length, sha256: SHA256Value(reading: bytes, at: at + 4)))
            offset = sum
        }
        guard offset == fileSize else {
            throw refuse(.total, "its \(count) chunks add up to \(offset) bytes, not the file's \(fileSize)")
        }
        return ChunkIndex(parameters: parameters, fileSize: fileSize, sha256: sha256, chunks: chunks)
    }

    private static func refusal(_ source: String, _ kind: ChunkIndexError.Kind, _ problem: String) -> ChunkIndexError {
        ChunkIndexError(source: source, kind: kind, problem: problem)
    }
}
